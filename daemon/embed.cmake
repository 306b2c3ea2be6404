# Turn a text file into a C string constant:
#   cmake -DOUT=file.c -DNAME=symbol -DIN=file.txt -P embed.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN}; do not edit. */\nconst char ${NAME}[] = {${bytes}0x00};\n")
