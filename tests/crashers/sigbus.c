/* Reading a mapped page past the end of a truncated file: SIGBUS with BUS_ADRERR. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) int read_page(volatile char *p) { return p[8192]; }

int main(void) {
    const char *path = "sigbus.data";
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 16384) != 0) return 1;
    char *map = mmap(NULL, 16384, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return 1;
    if (ftruncate(fd, 0) != 0) return 1;
    printf("%d\n", read_page(map));
    return 0;
}
