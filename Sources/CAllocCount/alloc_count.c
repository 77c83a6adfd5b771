#include "alloc_count.h"
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static __thread int counting = 0;
static __thread unsigned long count = 0;

void *malloc(size_t n) { if (counting) count++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { if (counting) count++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { if (counting) count++; return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { if (counting) count++; return __libc_memalign(a, n); }
void *memalign(size_t a, size_t n) { if (counting) count++; return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    if (counting) count++;
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void edge_alloc_count_begin(void) { count = 0; counting = 1; }
unsigned long edge_alloc_count_end(void) { counting = 0; return count; }
