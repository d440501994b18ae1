/* The I/O floor: performs exactly the file operations a peerpath scan performed (taken from
 * strace of that scan), and nothing else. Input lines: "f PATH" read a whole file, "l PATH"
 * readlink, "d PATH" list a directory. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: floor OPS\n"); return 2; }
    FILE *in = fopen(argv[1], "r");
    if (!in) { perror(argv[1]); return 2; }
    static char line[8192], buf[65536];
    long ops = 0;
    while (fgets(line, sizeof line, in)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n') line[--n] = 0;
        if (n < 3) continue;
        const char *p = line + 2;
        if (line[0] == 'f') {
            int fd = open(p, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) { while (read(fd, buf, sizeof buf) > 0) {} close(fd); }
        } else if (line[0] == 'l') {
            (void)readlink(p, buf, sizeof buf);
        } else if (line[0] == 'd') {
            DIR *d = opendir(p);
            if (d) { while (readdir(d)) {} closedir(d); }
        }
        ops++;
    }
    printf("%ld\n", ops);
    return 0;
}
