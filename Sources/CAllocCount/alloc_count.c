#include "alloc_count.h"
#include <stddef.h>
#include <errno.h>

static __thread int counting = 0;
static __thread unsigned long count = 0;

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#    define EDGE_ALLOC_COUNT_HOOKS 1
#  endif
#endif

#ifdef EDGE_ALLOC_COUNT_HOOKS
// Under AddressSanitizer or ThreadSanitizer the sanitizer owns the
// allocator: a second malloc here would hand it blocks it never made (the
// test bundle, which links edge-bench for EdgeBenchTests, crashed at once).
// Count through the sanitizer's allocation hook instead.
#include <sanitizer/allocator_interface.h>
static void on_malloc(const volatile void *p, size_t n) { (void)p; (void)n; if (counting) count++; }
static void on_free(const volatile void *p) { (void)p; }
__attribute__((constructor)) static void install_hooks(void) {
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

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

#endif

void edge_alloc_count_begin(void) { count = 0; counting = 1; }
unsigned long edge_alloc_count_end(void) { counting = 0; return count; }
