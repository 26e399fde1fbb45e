/* The support modules: error records, the string map, the arena, atomic files, JSON
 * pointers, the hash. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena.h"
#include "atomic_file.h"
#include "big_buffer.h"
#include "grow.h"
#include "hash.h"
#include "json_reader.h"
#include "strmap.h"
#include "suites.h"
#include "test_util.h"

static void test_error_first_wins(void)
{
    pl_error err;
    pl_error_init(&err, "m.json");
    CU_ASSERT_EQUAL(pl_error_set(&err, PL_EINPUT, "/a", "first %d", 1), PL_EINPUT);
    pl_error_set(&err, PL_EIO, "/b", "second");
    char line[256];
    pl_error_format(&err, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "m.json: /a: first 1");
    CU_ASSERT_EQUAL(err.status, PL_EINPUT);

    pl_error_init(&err, "m.json");
    pl_error_set_at(&err, PL_EINPUT, 3, 14, "bad\nthing");
    pl_error_format(&err, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "m.json:3:14: bad thing"); /* always one line */
    CU_ASSERT_EQUAL(pl_error_set(NULL, PL_EIO, NULL, "ignored"), PL_EIO);
}

static void test_strmap(void)
{
    pl_strmap map = {0};
    char keys[5000][16];
    for (int i = 0; i < 5000; i++) {
        snprintf(keys[i], sizeof keys[i], "t%d", i);
        int existing;
        CU_ASSERT_TRUE(pl_strmap_put(&map, keys[i], i, &existing));
        CU_ASSERT_EQUAL(existing, -1);
    }
    int existing;
    CU_ASSERT_TRUE(pl_strmap_put(&map, "t42", 7, &existing));
    CU_ASSERT_EQUAL(existing, 42);
    for (int i = 0; i < 5000; i += 97)
        CU_ASSERT_EQUAL(pl_strmap_get(&map, keys[i]), i);
    CU_ASSERT_EQUAL(pl_strmap_get(&map, "absent"), -1);
    CU_ASSERT_EQUAL(map.count, 5000u);
    pl_strmap_release(&map);
    CU_ASSERT_EQUAL(pl_strmap_get(&map, "t1"), -1);
}

/* Room reserved for every key: storing them never grows the table, and all are found. */
static void test_strmap_reserve(void)
{
    pl_strmap map = {0};
    char keys[3000][16];
    CU_ASSERT_TRUE(pl_strmap_reserve(&map, 3000));
    size_t cap = map.cap;
    CU_ASSERT_TRUE(cap >= 6000);
    for (int i = 0; i < 3000; i++) {
        snprintf(keys[i], sizeof keys[i], "n%d", i);
        CU_ASSERT_TRUE(pl_strmap_put(&map, keys[i], i, NULL));
    }
    CU_ASSERT_EQUAL(map.cap, cap);
    for (int i = 0; i < 3000; i++)
        CU_ASSERT_EQUAL(pl_strmap_get(&map, keys[i]), i);
    CU_ASSERT_TRUE(pl_strmap_reserve(&map, 10)); /* never shrinks */
    CU_ASSERT_EQUAL(map.cap, cap);
    pl_strmap_release(&map);
}

static void test_arena(void)
{
    pl_arena arena = {0};
    char *small = pl_arena_strndup(&arena, "hello world", 5);
    CU_ASSERT_STRING_EQUAL(small, "hello");
    unsigned char *big = pl_arena_alloc(&arena, 1 << 20); /* larger than a block */
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    CU_ASSERT_EQUAL(big[12345], 0);
    big[(1 << 20) - 1] = 1;
    CU_ASSERT_STRING_EQUAL(small, "hello");
    pl_arena_release(&arena);
    pl_arena_release(&arena);
}

static void test_big_buffer(void)
{
    /* from a byte to 9 MiB: aligned for the kernels, every byte writable */
    const size_t sizes[] = {0, 1, 64, 65, 4 << 20, (9 << 20) + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = pl_big_buffer(sizes[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL((uintptr_t)p % (sizes[i] >= (4 << 20) ? 2 << 20 : 64), 0);
        memset(p, 0xab, sizes[i] ? sizes[i] : 64);
        CU_ASSERT_EQUAL(p[sizes[i] ? sizes[i] - 1 : 63], 0xab);
        free(p);
    }
    CU_ASSERT_PTR_NULL(pl_big_buffer(SIZE_MAX));
    CU_ASSERT_PTR_NULL(pl_big_buffer((size_t)PTRDIFF_MAX));
}

static void test_atomic_file(void)
{
    char dir[] = "/tmp/placer-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    FILE *old = fopen(path, "w");
    fputs("old\n", old);
    fclose(old);

    pl_atomic_file file;
    CU_ASSERT_EQUAL(pl_atomic_open(&file, path, NULL), PL_OK);
    fputs("new\n", file.fp);
    pl_atomic_abort(&file); /* the old file stays */
    char line[16] = "";
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
    fclose(f);
    CU_ASSERT_STRING_EQUAL(line, "old\n");

    CU_ASSERT_EQUAL(pl_atomic_open(&file, path, NULL), PL_OK);
    fputs("new\n", file.fp);
    CU_ASSERT_EQUAL(pl_atomic_commit(&file, NULL), PL_OK);
    f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
    fclose(f);
    CU_ASSERT_STRING_EQUAL(line, "new\n");

    pl_error err;
    pl_error_init(&err, NULL);
    snprintf(path, sizeof path, "%s/missing/out.txt", dir);
    CU_ASSERT_EQUAL(pl_atomic_open(&file, path, &err), PL_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "No such file or directory"));
    snprintf(path, sizeof path, "%s/out.txt", dir);
    unlink(path);
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* nothing left behind */
}

/* The temporary file is .NAME.placer-tmp-PID-XXXXXX beside the file it replaces: beside a
 * link's target, not the link, which stays a link. */
static void test_atomic_file_temp_name(void)
{
    char dir[] = "/tmp/placer-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char sub[64], target[64], link[64];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(target, sizeof target, "%s/sub/real.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("sub/real.json", link), 0);

    pl_atomic_file file;
    CU_ASSERT_EQUAL_FATAL(pl_atomic_open(&file, link, NULL), PL_OK);
    size_t folder = strlen(sub) + 1;
    CU_ASSERT_EQUAL(strncmp(file.temp, target, folder), 0);
    CU_ASSERT_EQUAL(strncmp(file.temp + folder, ".real.json" PL_ATOMIC_TEMP_INFIX,
                            strlen(".real.json" PL_ATOMIC_TEMP_INFIX)), 0);
    char pid[24];
    snprintf(pid, sizeof pid, "%ld-", (long)getpid());
    size_t infix = folder + strlen(".real.json" PL_ATOMIC_TEMP_INFIX);
    CU_ASSERT_EQUAL(strncmp(file.temp + infix, pid, strlen(pid)), 0);
    CU_ASSERT_EQUAL(strlen(file.temp), infix + strlen(pid) + 6);
    struct stat st;
    CU_ASSERT_EQUAL(stat(file.temp, &st), 0);
    fputs("new\n", file.fp);
    CU_ASSERT_EQUAL(pl_atomic_commit(&file, NULL), PL_OK);
    CU_ASSERT(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CU_ASSERT(lstat(target, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);

    unlink(link);
    unlink(target);
    rmdir(sub);
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* nothing left behind */
}

/* A temporary file whose writer no longer runs (killed outright) is removed by the next
 * write of the same target; one whose writer runs, or another target's, stays. */
static void test_atomic_file_leftovers(void)
{
    char dir[] = "/tmp/placer-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    pid_t child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0)
        _exit(0);
    CU_ASSERT_EQUAL_FATAL(waitpid(child, NULL, 0), child); /* now a PID that runs nothing */

    char dead[128], live[128], other[128], odd[128], target[64];
    snprintf(dead, sizeof dead, "%s/.out.json" PL_ATOMIC_TEMP_INFIX "%ld-abcdef", dir, (long)child);
    snprintf(live, sizeof live, "%s/.out.json" PL_ATOMIC_TEMP_INFIX "%ld-abcdef", dir,
             (long)getpid());
    snprintf(other, sizeof other, "%s/.in.json" PL_ATOMIC_TEMP_INFIX "%ld-abcdef", dir,
             (long)child);
    snprintf(odd, sizeof odd, "%s/.out.json" PL_ATOMIC_TEMP_INFIX "%ld-abc", dir, (long)child);
    snprintf(target, sizeof target, "%s/out.json", dir);
    const char *made[] = {dead, live, other, odd};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        FILE *fp = fopen(made[i], "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
        fclose(fp);
    }

    pl_atomic_file file;
    CU_ASSERT_EQUAL_FATAL(pl_atomic_open(&file, target, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_atomic_commit(&file, NULL), PL_OK);
    struct stat st;
    CU_ASSERT_NOT_EQUAL(lstat(dead, &st), 0);
    CU_ASSERT_EQUAL(lstat(live, &st), 0);
    CU_ASSERT_EQUAL(lstat(other, &st), 0);
    CU_ASSERT_EQUAL(lstat(odd, &st), 0);

    for (size_t i = 0; i < sizeof made / sizeof *made; i++)
        unlink(made[i]);
    unlink(target);
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* nothing left behind */
}

/* Doubling from the first capacity, room kept, and an overflowing size refused with the
 * array left as it was. */
static void test_grow(void)
{
    int *items = NULL, cap = 0;
    CU_ASSERT_TRUE_FATAL(pl_grow(&items, &cap, 1, sizeof *items, 16));
    CU_ASSERT_EQUAL(cap, 16);
    for (int i = 0; i < 1000; i++) {
        CU_ASSERT_TRUE_FATAL(pl_grow(&items, &cap, i + 1, sizeof *items, 16));
        items[i] = i;
    }
    CU_ASSERT_EQUAL(cap, 1024);
    CU_ASSERT_EQUAL(items[999], 999);
    int *before = items;
    CU_ASSERT_FALSE(pl_grow(&items, &cap, 2000, SIZE_MAX / 1024, 16));
    CU_ASSERT_PTR_EQUAL(items, before);
    CU_ASSERT_EQUAL(cap, 1024);
    CU_ASSERT_TRUE(pl_grow(&items, &cap, 10, sizeof *items, 16)); /* room already */
    CU_ASSERT_EQUAL(cap, 1024);
    free(items);
}

static void test_json_pointer_escapes(void)
{
    pl_json_reader r;
    pl_json_reader_init(&r, NULL);
    size_t back = pl_json_push_key(&r, "nodes");
    pl_json_push_index(&r, 17);
    pl_json_push_key(&r, "a/b~c");
    CU_ASSERT_STRING_EQUAL(r.path, "/nodes/17/a~1b~0c");
    pl_json_pop(&r, back);
    CU_ASSERT_STRING_EQUAL(r.path, "");
}

/* The hash skips runs of zero bytes with powers of the prime: the same values as FNV-1a a
 * byte at a time, which plans and calibration profiles record, for runs of every length at
 * every offset. */
static void test_hash_zero_runs(void)
{
    unsigned char bytes[64];
    uint64_t state = 12345;
    for (int trial = 0; trial < 2000; trial++) {
        for (size_t i = 0; i < sizeof bytes; i++) {
            state = state * UINT64_C(6364136223846793005) + 1442695040888963407u;
            bytes[i] = (state >> 60) < 10 ? 0 : (unsigned char)(state >> 33);
        }
        size_t size = (size_t)trial % (sizeof bytes + 1);
        uint64_t expected = PL_HASH_INIT;
        for (size_t i = 0; i < size; i++)
            expected = (expected ^ bytes[i]) * PL_HASH_PRIME;
        CU_ASSERT_EQUAL(pl_hash_bytes(PL_HASH_INIT, bytes, size), expected);
    }
    static const unsigned char zeros[40] = {0};
    CU_ASSERT_EQUAL(pl_hash_bytes(PL_HASH_INIT, zeros, sizeof zeros),
                    pl_hash_bytes(pl_hash_bytes(PL_HASH_INIT, zeros, 13), zeros, 27));
}

void pl_register_support_tests(void)
{
    static const pl_test_case cases[] = {
        {"the first error wins and stays on one line", test_error_first_wins},
        {"string map grows and finds", test_strmap},
        {"string map keeps the room reserved", test_strmap_reserve},
        {"arena allocations", test_arena},
        {"large buffers: aligned, whole, refused past the address space", test_big_buffer},
        {"atomic files replace whole or not at all", test_atomic_file},
        {"atomic files: the temporary name, beside a link's target", test_atomic_file_temp_name},
        {"atomic files: what killed writers left is removed", test_atomic_file_leftovers},
        {"arrays grow by doubling, overflow refused", test_grow},
        {"JSON pointers escape / and ~", test_json_pointer_escapes},
        {"the hash skips zero runs with the same values", test_hash_zero_runs},
        {NULL, NULL},
    };
    pl_test_add_suite("support", cases);
}
