#include <stdio.h>

int main(void)
{
    fprintf(stderr, "resource-trackerctl: not implemented yet\n");
    return 1;
}
