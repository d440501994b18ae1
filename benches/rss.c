/* Runs a command and prints its peak resident set size in KiB (wait4's ru_maxrss). A tiny
 * parent keeps the pre-exec copy small, unlike measuring from Python. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: rss CMD...\n"); return 2; }
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1); dup2(fd, 2);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status; struct rusage ru;
    wait4(pid, &status, 0, &ru);
    printf("%ld\n", ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
