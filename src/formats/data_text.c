/* Text: a file of characters read whole into ids, cut into windows of T characters whose
 * labels are the characters that follow (next-character prediction). The alphabet, the
 * one mapping from bytes to ids, is pl_data_char_id. */
#include "data_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input_file.h"

/* The symbols with ids of their own, most frequent (in English text) first, so that a
 * model with fewer ids than symbols loses only the rarest ones: newline, space, lower
 * case, upper case, digits, punctuation. 96 symbols: printable ASCII and newline. */
static const char alphabet[] = "\n etaoinsrhldcumfpgwybvkxjqz"
                               "ETAOINSRHLDCUMFPGWYBVKXJQZ"
                               "0123456789"
                               ".,;:'\"!?-()[]{}<>/\\|_@#$%&*+=^`~";
_Static_assert(sizeof alphabet - 1 == PL_TEXT_ALPHABET, "the alphabet has 96 symbols");

/* Other whitespace reads as a space; any other byte (control characters, the bytes of
 * UTF-8 sequences) shares the "other" id after the alphabet. Symbols whose rank does not
 * fit below `vocab` share its last id. */
int pl_data_char_id(unsigned char byte, int64_t vocab)
{
    if (byte == '\t' || byte == '\r' || byte == '\v' || byte == '\f')
        byte = ' ';
    const char *hit = byte ? strchr(alphabet, byte) : NULL;
    int64_t rank = hit ? hit - alphabet : PL_TEXT_ALPHABET;
    if (vocab <= 1)
        return 0;
    return (int)(rank < vocab - 1 ? rank : vocab - 1);
}

typedef struct text_source {
    int tokens, targets; /* tensor indices */
    int64_t steps;       /* T */
    int64_t length;      /* characters */
    unsigned char *ids;  /* one id per character; every id is below 97 */
    int64_t test_first;  /* the test split's first window */
} text_source;

static void release_text(void *source)
{
    text_source *t = source;
    if (!t)
        return;
    free(t->ids);
    free(t);
}

/* Reads the whole file, which has `size` bytes by its length (at most PL_TEXT_MAX_BYTES);
 * a file that grew since is read only that far. */
static pl_status read_all(FILE *file, const char *path, int64_t size, unsigned char **bytes,
                          int64_t *length, pl_error *err)
{
    unsigned char *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return pl_data_fail(err, PL_ENOMEM, path, "out of memory reading %lld bytes of text",
                            (long long)size);
    size_t n = fread(buf, 1, (size_t)size, file);
    if (ferror(file)) {
        free(buf);
        return pl_data_fail(err, PL_EIO, path, "read error: %s", strerror(errno));
    }
    *bytes = buf;
    *length = (int64_t)n;
    return PL_OK;
}

static pl_status load_ids(text_source *t, const char *path, int64_t vocab, pl_error *err)
{
    int fd;
    int64_t size;
    pl_status status = pl_data_open_file(path, &fd, &size, err);
    if (status != PL_OK)
        return status;
    if (size > PL_TEXT_MAX_BYTES) {
        close(fd);
        return pl_data_fail(err, PL_EINPUT, path, "the text has %lld bytes; the limit is %lld",
                            (long long)size, (long long)PL_TEXT_MAX_BYTES);
    }
    FILE *file = fdopen(fd, "rb");
    if (!file) {
        close(fd);
        return pl_data_fail(err, PL_ENOMEM, path, "cannot open: %s", strerror(errno));
    }
    status = read_all(file, path, size, &t->ids, &t->length, err);
    fclose(file);
    if (status != PL_OK)
        return status;
    unsigned char table[256];
    for (int b = 0; b < 256; b++)
        table[b] = (unsigned char)pl_data_char_id((unsigned char)b, vocab);
    for (int64_t i = 0; i < t->length; i++)
        t->ids[i] = table[t->ids[i]];
    return PL_OK;
}

/* Windows of T characters, each with the character after it; the last tenth of them (at
 * least one) is the test split. A text with a single window lends it to both splits. */
static void split_windows(pl_dataset *data, text_source *t)
{
    int64_t windows = (t->length - 1) / t->steps;
    int64_t test = windows / 10 > 0 ? windows / 10 : 1;
    if (windows == 1) {
        data->size[PL_SPLIT_TRAIN] = 1;
        t->test_first = 0;
    } else {
        data->size[PL_SPLIT_TRAIN] = windows - test;
        t->test_first = windows - test;
    }
    data->size[PL_SPLIT_TEST] = test;
}

static void fill_text(const pl_dataset *data, pl_split split, int64_t sample, int slot,
                      int count, void *const *inputs)
{
    const text_source *t = data->source;
    int64_t window = split == PL_SPLIT_TEST ? t->test_first + sample : sample;
    const unsigned char *ids = t->ids + window * t->steps;
    int32_t *tokens = (int32_t *)inputs[t->tokens] + (size_t)slot * (size_t)t->steps;
    int32_t *targets = (int32_t *)inputs[t->targets] + (size_t)slot * (size_t)t->steps;
    for (int64_t s = 0; s < t->steps; s++) {
        tokens[s] = ids[s];
        targets[s] = ids[s + 1];
    }
}

pl_status pl_data_open_text(pl_dataset *data, const pl_data_match *match, const char *path,
                            pl_error *err)
{
    text_source *t = calloc(1, sizeof *t);
    if (!t)
        return pl_data_fail(err, PL_ENOMEM, path, "out of memory");
    t->tokens = match->data;
    t->targets = match->label;
    t->steps = match->steps;
    data->kind = PL_DATA_TEXT;
    data->source = t;
    data->release = release_text;
    data->fill = fill_text;
    pl_status status = load_ids(t, path, match->vocab, err);
    if (status != PL_OK)
        return status;
    if (t->length < t->steps + 1)
        return pl_data_fail(err, PL_EINPUT, path,
                            "too short: %lld characters, but a window of %lld characters "
                            "and the one after it need at least %lld",
                            (long long)t->length, (long long)t->steps,
                            (long long)t->steps + 1);
    split_windows(data, t);
    snprintf(data->describe, sizeof data->describe,
             "text (%s: %lld characters as %lld ids; windows of %lld: %lld training, %lld "
             "test)",
             path, (long long)t->length, (long long)match->vocab, (long long)t->steps,
             (long long)data->size[PL_SPLIT_TRAIN], (long long)data->size[PL_SPLIT_TEST]);
    return PL_OK;
}
