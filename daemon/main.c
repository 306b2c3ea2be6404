#include <stdio.h>

int main(void)
{
    fprintf(stderr, "resource-trackerd: not implemented yet\n");
    return 1;
}
