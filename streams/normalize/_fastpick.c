/* The extractor's hot path in C: the (text, host, time) of a shipper's common JSON record.
 *
 * pick(raw, source, kafka_ms, user_written) returns exactly what
 * streams.normalize.log_record.common_json_fields(raw, source, None, k, k) returns (k: kafka_ms,
 * None when negative), or None meaning "not sure: take the Python path". It only answers for
 * what it reads completely: a flat JSON object of ASCII strings (escapes \" \\ \/ \t only),
 * plain numbers, true/false/null; an English RFC 3164 header, an RFC 3339 header, a bracketed
 * dmesg time or no header at all. Everything else (non-ASCII, nested values, other escapes, a
 * PRI, localized months, dmesg -T, workload fields, odd times, ...) is declined, never guessed:
 * the Python path is the oracle (tests/streams/test_fastpick.py) and decides what C declines.
 * pick_line does the same for the backtest on a whole recording line (streams/recording.py),
 * reading the value object's bytes in place (tests/streams/test_backtest_fastpick.py).
 *
 * C99 and the Python C-API only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DAY_MS 86400000LL
#define MIN_YEAR 1971 /* outside these, Python may overflow or infer years oddly: decline */
#define MAX_YEAR 9000

/* ---- the record's keys: which ones the planned path looks at ------------------------------ */

enum {
    K_LOG, K_MESSAGE, K_MESSAGE_UP, K_MSG,        /* TEXT_KEYS, in order */
    K_ATTIMESTAMP, K_TIMESTAMP, K_TIME,           /* TIME_KEYS */
    K_HOST, K_HOSTNAME, K__HOSTNAME, K_HOSTNAME_UP, K__hostname, /* host keys */
    K_SOURCE_TYPE,
    K_COUNT,
    K_WORKLOAD = K_COUNT /* any of WORKLOAD_FIELDS */
};

typedef struct {
    const char *name;
    int len;
    int index;
} KeyName;

static const KeyName KEYS[] = {
    {"log", 3, K_LOG}, {"message", 7, K_MESSAGE}, {"MESSAGE", 7, K_MESSAGE_UP}, {"msg", 3, K_MSG},
    {"@timestamp", 10, K_ATTIMESTAMP}, {"timestamp", 9, K_TIMESTAMP}, {"time", 4, K_TIME},
    {"host", 4, K_HOST}, {"hostname", 8, K_HOSTNAME}, {"_HOSTNAME", 9, K__HOSTNAME},
    {"HOSTNAME", 8, K_HOSTNAME_UP}, {"_hostname", 9, K__hostname}, {"source_type", 11, K_SOURCE_TYPE},
    /* streams.normalize.applog.WORKLOAD_FIELDS */
    {"workload_id", 11, K_WORKLOAD}, {"job_id", 6, K_WORKLOAD}, {"SLURM_JOB_ID", 12, K_WORKLOAD},
    {"slurm_job_id", 12, K_WORKLOAD}, {"rank", 4, K_WORKLOAD}, {"RANK", 4, K_WORKLOAD},
    {"SLURM_PROCID", 12, K_WORKLOAD}, {"SLURM_ARRAY_JOB_ID", 18, K_WORKLOAD},
    {"SLURM_ARRAY_TASK_ID", 19, K_WORKLOAD}, {"kubernetes", 10, K_WORKLOAD},
};
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

static const int FLUENTBIT_HOSTS[] = {K_HOST, K_HOSTNAME, K__HOSTNAME, K_HOSTNAME_UP, K__hostname, -1};
static const int VECTOR_HOSTS[] = {K_HOSTNAME, K_HOST, K__HOSTNAME, -1};

enum { V_STR = 1, V_FLOAT, V_INT, V_OTHER };

typedef struct {
    int kind;          /* 0: absent */
    const char *start; /* a string's raw bytes (escapes as sent) */
    Py_ssize_t len;
    Py_ssize_t escapes; /* two-byte escapes in it */
    double number;
} Field;

typedef struct {
    Field fields[K_COUNT];
    int workload;
} Record;

static int key_index(const char *s, Py_ssize_t n) {
    for (int i = 0; i < N_KEYS; i++) {
        if (KEYS[i].len == n && memcmp(KEYS[i].name, s, (size_t)n) == 0) {
            return KEYS[i].index;
        }
    }
    return -1;
}

/* ---- JSON: a strict reader of the flat objects shippers send; -1 means decline ------------ */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        p++;
    }
    return p;
}

/* p at the opening quote; the end after the closing one, or NULL to decline. */
static const char *read_string(const char *p, const char *end, Field *out) {
    const char *start = ++p;
    Py_ssize_t escapes = 0;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            out->kind = V_STR;
            out->start = start;
            out->len = p - start;
            out->escapes = escapes;
            return p + 1;
        }
        if (c == '\\') {
            if (p + 1 >= end) {
                return NULL;
            }
            char e = p[1];
            if (e != '"' && e != '\\' && e != '/' && e != 't') {
                return NULL; /* \n, \r, \u...: the Python path splits or decodes them */
            }
            escapes++;
            p += 2;
            continue;
        }
        if (c < 0x20 || c >= 0x7f) {
            return NULL; /* invalid JSON, DEL, or non-ASCII */
        }
        p++;
    }
    return NULL;
}

static const char *read_digits(const char *p, const char *end) {
    while (p < end && *p >= '0' && *p <= '9') {
        p++;
    }
    return p;
}

/* Clinger's fast path: digits of at most 2^53 over a power of ten up to 10^22 are both exact
 * doubles, so one division rounds correctly (what strtod and orjson give); 0 if it does not apply. */
static int fast_float(const char *p, const char *end, double *out) {
    static const double tens[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int negative = *p == '-';
    uint64_t digits = 0;
    int fraction = -1; /* digits after the point */
    for (p += negative; p < end; p++) {
        if (*p == '.') {
            fraction = 0;
            continue;
        }
        digits = digits * 10 + (uint64_t)(*p - '0');
        fraction += fraction >= 0;
    }
    if (digits > (1ULL << 53) || fraction < 0 || fraction > 22) {
        return 0;
    }
    *out = (double)digits / tens[fraction];
    *out = negative ? -*out : *out;
    return 1;
}

/* JSON's number grammar without an exponent, at most 17 characters (orjson reads those exactly
 * as int or float; huge or exponent forms are declined). */
static const char *read_number(const char *p, const char *end, Field *out) {
    const char *start = p;
    if (p < end && *p == '-') {
        p++;
    }
    if (p >= end || *p < '0' || *p > '9') {
        return NULL;
    }
    if (*p == '0') {
        p++;
    } else {
        p = read_digits(p, end);
    }
    out->kind = V_INT;
    if (p < end && *p == '.') {
        const char *digits = ++p;
        p = read_digits(p, end);
        if (p == digits) {
            return NULL;
        }
        out->kind = V_FLOAT;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        return NULL;
    }
    if (p - start > 17) {
        return NULL;
    }
    if (out->kind == V_FLOAT && fast_float(start, p, &out->number)) {
        return p;
    }
    if (out->kind == V_FLOAT) {
        char buffer[24];
        memcpy(buffer, start, (size_t)(p - start));
        buffer[p - start] = '\0';
        out->number = strtod(buffer, NULL);
    }
    return p;
}

static const char *read_literal(const char *p, const char *end, Field *out) {
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(end - p) >= n && memcmp(p, words[i], n) == 0) {
            out->kind = V_OTHER;
            return p + n;
        }
    }
    return NULL;
}

static const char *read_value(const char *p, const char *end, Field *out) {
    if (p >= end) {
        return NULL;
    }
    if (*p == '"') {
        return read_string(p, end, out);
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        return read_number(p, end, out);
    }
    return read_literal(p, end, out); /* objects and arrays: declined */
}

/* p at a flat object's '{': the end after its '}', or NULL to decline. */
static const char *read_object(const char *p, const char *end, Record *record) {
    memset(record, 0, sizeof(*record));
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') {
        return NULL; /* {}: no text, Python's answer is None */
    }
    for (;;) {
        Field key, value;
        if (p >= end || *p != '"') {
            return NULL;
        }
        p = read_string(p, end, &key);
        if (p == NULL || key.escapes) {
            return NULL;
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ':') {
            return NULL;
        }
        p = read_value(skip_ws(p + 1, end), end, &value);
        if (p == NULL) {
            return NULL;
        }
        int index = key_index(key.start, key.len);
        if (index == K_WORKLOAD) {
            record->workload = 1;
        } else if (index >= 0) {
            if (record->fields[index].kind) {
                return NULL; /* a repeated key: the last value wins in orjson; not worth reading */
            }
            record->fields[index] = value;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') {
            return p + 1;
        }
        return NULL;
    }
}

/* 0 when the whole of raw is one flat object we read; -1 to decline. */
static int read_record(const char *p, const char *end, Record *record) {
    p = read_object(p, end, record); /* raw[0] is '{' */
    return p != NULL && skip_ws(p, end) == end ? 0 : -1;
}

/* ---- times ---------------------------------------------------------------------------------- */

static int leap(int64_t year) { return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0); }

static int days_in_month(int64_t year, int month) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && leap(year) ? 29 : days[month - 1];
}

/* times.civil_ms: Howard Hinnant's days_from_civil (years >= 1 here, so plain division). */
static int64_t civil_ms(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute,
                        int64_t second) {
    int64_t y = year - (month <= 2);
    int64_t era = y / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return ((days * 24 + hour) * 60 + minute) * 60000 + second * 1000;
}

/* The UTC year of a non-negative epoch ms. */
static int64_t year_of(int64_t ms) {
    int64_t year = 1970 + ms / (DAY_MS * 366);
    while (civil_ms(year + 1, 1, 1, 0, 0, 0) <= ms) {
        year++;
    }
    return year;
}

static int digits_value(const char *s, int n, int *out) {
    int value = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        value = value * 10 + (s[i] - '0');
    }
    *out = value;
    return 0;
}

enum { T_OK, T_NONE, T_DECLINE };

/* times.rfc3339_ms, tri-state: T_NONE only where Python surely gives None (too short, or no date
 * separator at [10]); the forms read here are YYYY-MM-DD[Tt ]HH:MM:SS[.f{1,6}][Z|±HH:MM|±HHMM]. */
static int iso_ms(const char *s, Py_ssize_t n, int64_t *out) {
    int year, month, day, hour, minute, second, frac = 0, offset = 0;
    if (n < 19 || (s[10] != 'T' && s[10] != 't' && s[10] != ' ')) {
        return T_NONE;
    }
    if (s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' || digits_value(s, 4, &year) ||
        digits_value(s + 5, 2, &month) || digits_value(s + 8, 2, &day) || digits_value(s + 11, 2, &hour) ||
        digits_value(s + 14, 2, &minute) || digits_value(s + 17, 2, &second)) {
        return T_DECLINE;
    }
    if (year < MIN_YEAR || year > MAX_YEAR || month < 1 || month > 12 || day < 1 ||
        day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 59) {
        return T_DECLINE;
    }
    Py_ssize_t at = 19;
    if (at < n && s[at] == '.') {
        Py_ssize_t first = ++at;
        while (at < n && s[at] >= '0' && s[at] <= '9') {
            at++;
        }
        if (at == first || at - first > 6) {
            return T_DECLINE;
        }
        for (Py_ssize_t i = 0; i < 3; i++) {
            frac = frac * 10 + (first + i < at ? s[first + i] - '0' : 0);
        }
    }
    if (at < n && s[at] == 'Z') {
        at++;
    } else if (at < n && (s[at] == '+' || s[at] == '-')) {
        int sign = s[at] == '+' ? 1 : -1, oh, om;
        Py_ssize_t left = n - at - 1;
        const char *z = s + at + 1;
        if (left == 5 && z[2] == ':' && !digits_value(z, 2, &oh) && !digits_value(z + 3, 2, &om)) {
            at += 6;
        } else if (left == 4 && !digits_value(z, 2, &oh) && !digits_value(z + 2, 2, &om)) {
            at += 5;
        } else {
            return T_DECLINE;
        }
        if (oh > 23 || om > 59) {
            return T_DECLINE;
        }
        offset = sign * (oh * 60 + om);
    }
    if (at != n) {
        return T_DECLINE;
    }
    *out = civil_ms(year, month, day, hour, minute, second) + frac - (int64_t)offset * 60000;
    return T_OK;
}

/* ---- the line's header (syslog_line.parse_line_header) -------------------------------------- */

typedef struct {
    int has_ms;
    int64_t ms;
    const char *host; /* NULL: none */
    Py_ssize_t host_len;
} Header;

static const char *const MONTHS[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* syslog_line.LOCAL_MONTHS' ASCII names (a line starting with one of them is declined). */
static const char *const LOCAL_ASCII[] = {
    "Apr", "Aug", "Dez", "Feb", "Jan", "Jul", "Jun", "Mai", "Nov", "Okt", "Sep", "abr", "ago", "apr",
    "aug", "avril", "dec", "dic", "ene", "feb", "gen", "giu", "jan", "janv.", "juil.", "juin", "jul",
    "jun", "lug", "mag", "mai", "mar", "mars", "may", "mei", "mrt", "nov", "nov.", "oct", "oct.", "okt",
    "ott", "sep", "sept", "sept.", "set", NULL,
};

static Py_ssize_t find_char(const char *s, Py_ssize_t from, Py_ssize_t to, char c) {
    for (Py_ssize_t i = from; i < to; i++) {
        if (s[i] == c) {
            return i;
        }
    }
    return -1;
}

/* str.partition(" "): the head's length; *rest and *rest_len the part after the space. */
static Py_ssize_t partition(const char *s, Py_ssize_t n, const char **rest, Py_ssize_t *rest_len) {
    Py_ssize_t space = find_char(s, 0, n, ' ');
    if (space < 0) {
        *rest = s + n;
        *rest_len = 0;
        return n;
    }
    *rest = s + space + 1;
    *rest_len = n - space - 1;
    return space;
}

/* syslog_line._is_tag: "kernel:", "slurmd[1822]:". */
static int is_tag(const char *t, Py_ssize_t n) {
    if (n < 1 || t[n - 1] != ':') {
        return 0;
    }
    Py_ssize_t name = find_char(t, 0, n - 1, '[');
    name = name < 0 ? n - 1 : name;
    return name > 0 && find_char(t, 0, name, ':') < 0;
}

/* syslog_line._host_token. */
static void host_token(const char *after, Py_ssize_t n, int tag_needed, Header *h) {
    const char *rest;
    Py_ssize_t rest_len;
    Py_ssize_t token = partition(after, n, &rest, &rest_len);
    h->host = NULL;
    if (token == 0 || after[token - 1] == ':' || find_char(after, 0, token, '[') >= 0) {
        return;
    }
    if (tag_needed) {
        const char *ignored;
        Py_ssize_t ignored_len;
        if (!is_tag(rest, partition(rest, rest_len, &ignored, &ignored_len))) {
            return;
        }
    }
    h->host = after;
    h->host_len = token;
}

static int rfc3339_header(const char *t, Py_ssize_t n, Header *h) {
    static const char *const cri[] = {"stdout F ", "stderr F ", "stdout P ", "stderr P "};
    const char *after;
    Py_ssize_t after_len;
    Py_ssize_t token = partition(t, n, &after, &after_len);
    int state = iso_ms(t, token, &h->ms);
    if (state != T_OK) {
        return state == T_NONE ? 0 : -1;
    }
    h->has_ms = 1;
    if (t[token - 1] == 'Z' || t[token - 1] == 'z') {
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        if (after_len >= 9 && memcmp(after, cri[i], 9) == 0) {
            return 0;
        }
    }
    host_token(after, after_len, 1, h);
    return 0;
}

/* syslog_line._rfc3164 on line[4:], mirrored slice by slice. */
static int rfc3164(const char *rest, Py_ssize_t n, int month, int has_ref, int64_t ref, Header *h) {
    while (n > 0 && *rest == ' ') {
        rest++, n--;
    }
    const char *clock_at, *after;
    Py_ssize_t rest_len, after_len;
    Py_ssize_t day_len = partition(rest, n, &clock_at, &rest_len);
    int day, hh, mm, ss, frac = 0;
    for (Py_ssize_t i = 0; i < day_len; i++) {
        if (rest[i] < '0' || rest[i] > '9') {
            return 0; /* not a decimal day: Python sees no header */
        }
    }
    if (day_len == 0 || rest_len < 6 || clock_at[2] != ':' || clock_at[5] != ':') {
        return 0; /* no day, or no "hh:mm:" after it: no header */
    }
    if (day_len > 2 || digits_value(rest, (int)day_len, &day)) {
        return -1;
    }
    Py_ssize_t clock = partition(clock_at, rest_len, &after, &after_len);
    /* clock[6:] partitioned at '.': two digits of seconds, then nothing or '.' and digits */
    if (clock < 8 || digits_value(clock_at, 2, &hh) || digits_value(clock_at + 3, 2, &mm) ||
        digits_value(clock_at + 6, 2, &ss) || (clock > 8 && (clock_at[8] != '.' || clock == 9))) {
        return -1;
    }
    for (Py_ssize_t i = 9; i < clock; i++) {
        if (clock_at[i] < '0' || clock_at[i] > '9') {
            return -1;
        }
    }
    for (Py_ssize_t i = 9; i < 12 && clock > 8; i++) {
        frac = frac * 10 + (i < clock ? clock_at[i] - '0' : 0);
    }
    if (day < 1 || day > days_in_month(2001, month)) {
        return -1; /* day 0, Feb 29 (date_ms moves it to a leap year): the Python path */
    }
    int64_t clock_ms = (int64_t)hh * 3600000 + mm * 60000 + ss * 1000 + frac;
    if (has_ref) {
        if (ref < civil_ms(MIN_YEAR, 1, 1, 0, 0, 0) || ref >= civil_ms(MAX_YEAR, 1, 1, 0, 0, 0)) {
            return -1;
        }
        int64_t year = year_of(ref);
        int64_t stamp = civil_ms(year, month, day, 0, 0, 0) + clock_ms;
        if (stamp > ref + DAY_MS) {
            stamp = civil_ms(year - 1, month, day, 0, 0, 0) + clock_ms;
        }
        h->has_ms = 1;
        h->ms = stamp;
    }
    host_token(after, after_len, 0, h);
    return 0;
}

/* syslog_line._bracketed: "[12345.678]" and other bracketed starts have no wall clock; the 4-
 * and 5-word forms (fabric manager, dmesg -T) are declined. */
static int bracketed(const char *t, Py_ssize_t n) {
    Py_ssize_t close = find_char(t, 1, n < 40 ? n : 40, ']');
    if (close < 0) {
        return 0;
    }
    int words = 0, in_word = 0;
    for (Py_ssize_t i = 1; i < close; i++) {
        int space = t[i] == ' ' || t[i] == '\t';
        words += !space && !in_word;
        in_word = !space;
    }
    return words == 4 || words == 5 ? -1 : 0;
}

/* 0 with *h filled, -1 to decline. t is printable ASCII (and tabs), n > 0. */
static int line_header(const char *t, Py_ssize_t n, int has_ref, int64_t ref, Header *h) {
    memset(h, 0, sizeof(*h));
    if (t[0] == '<') {
        return -1;
    }
    if (t[0] == '[') {
        return bracketed(t, n);
    }
    if (t[0] >= '0' && t[0] <= '9') {
        return rfc3339_header(t, n, h);
    }
    if (n >= 3) {
        for (int m = 0; m < 12; m++) {
            if (memcmp(t, MONTHS[m], 3) == 0) {
                return n > 4 ? rfc3164(t + 4, n - 4, m + 1, has_ref, ref, h) : 0;
            }
        }
    }
    if (n >= 15 && t[6] == ':' && t[13] == ':' && t[14] == ' ') {
        return -1; /* dmesg -x */
    }
    Py_ssize_t space = find_char(t, 3, n < 6 ? n : 6, ' ');
    if (space > 0) {
        for (int i = 0; LOCAL_ASCII[i]; i++) {
            if ((Py_ssize_t)strlen(LOCAL_ASCII[i]) == space && memcmp(t, LOCAL_ASCII[i], (size_t)space) == 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* ---- the record's fields (log_record.common_record_fields' planned path) -------------------- */

static const Field *first_present(const Record *record, const int *keys) {
    for (int i = 0; keys[i] >= 0; i++) {
        if (record->fields[keys[i]].kind) {
            return &record->fields[keys[i]];
        }
    }
    return NULL;
}

/* The string's bytes with its escapes decoded, into a new ASCII str; NULL on memory errors. */
static PyObject *decoded(const Field *f) {
    PyObject *text = PyUnicode_New(f->len - f->escapes, 127);
    if (text == NULL) {
        return NULL;
    }
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(text);
    if (!f->escapes) {
        memcpy(out, f->start, (size_t)f->len);
        return text;
    }
    for (Py_ssize_t i = 0; i < f->len; i++) {
        char c = f->start[i];
        if (c == '\\') {
            c = f->start[++i];
            c = c == 't' ? '\t' : c;
        }
        *out++ = (Py_UCS1)c;
    }
    return text;
}

/* Hosts repeat record after record: one str per host name (its hash computed once, for the
 * line counts' dict), in a small direct-mapped table that a colliding name simply replaces. */
#define HOST_SLOTS 4096
static PyObject *host_table[HOST_SLOTS];

static PyObject *host_str(const char *s, Py_ssize_t n) {
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        hash = (hash ^ (unsigned char)s[i]) * 16777619u;
    }
    PyObject **slot = &host_table[hash % HOST_SLOTS];
    PyObject *cached = *slot;
    if (cached && PyUnicode_GET_LENGTH(cached) == n && memcmp(PyUnicode_1BYTE_DATA(cached), s, (size_t)n) == 0) {
        Py_INCREF(cached);
        return cached;
    }
    PyObject *made = PyUnicode_FromStringAndSize(s, n);
    if (made != NULL) {
        Py_XSETREF(*slot, made);
        Py_INCREF(made);
    }
    return made;
}

/* What log_record sends to the field-by-field path or rejects: empty or blank, "#0" (rsyslog's
 * escapes, "#01" included), a Docker json-file wrapper. NUL, ESC, BOM, CR, LF cannot be here. */
static int plain_text(const char *t, Py_ssize_t n) {
    int blank = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        blank = blank && (t[i] == ' ' || t[i] == '\t');
        if (t[i] == '#' && i + 1 < n && t[i + 1] == '0') {
            return 0;
        }
    }
    return !blank && !(n >= 7 && memcmp(t, "{\"log\":", 7) == 0);
}

/* The record's time field in ms: 1 with *ms set, 0 if absent, -1 to decline. */
static int field_time(const Record *record, int64_t *ms) {
    static const int keys[] = {K_ATTIMESTAMP, K_TIMESTAMP, K_TIME, -1};
    const Field *f = first_present(record, keys);
    if (f == NULL) {
        return 0;
    }
    if (f->kind == V_FLOAT && f->number >= 0 && f->number < 1e11) {
        *ms = (int64_t)nearbyint(f->number * 1000); /* Python's round(): half to even */
        return 1;
    }
    if (f->kind == V_STR && !f->escapes && f->len > 4 && f->start[4] == '-') {
        return iso_ms(f->start, f->len, ms) == T_OK ? 1 : -1;
    }
    return -1;
}

/* common_record_fields of a record read whole (its planned path), or None to decline. */
static PyObject *record_fields(const Record *record, int user_written, int has_kafka, int64_t kafka) {
    static const int text_keys[] = {K_LOG, K_MESSAGE, K_MESSAGE_UP, K_MSG, -1};
    if (record->workload) {
        Py_RETURN_NONE;
    }
    const Field *text_field = first_present(record, text_keys);
    if (text_field == NULL || text_field->kind != V_STR || text_field->len == 0) {
        Py_RETURN_NONE;
    }
    int64_t field_ms = 0;
    int has_field_ms = field_time(record, &field_ms);
    const Field *host_field =
        first_present(record, record->fields[K_SOURCE_TYPE].kind ? VECTOR_HOSTS : FLUENTBIT_HOSTS);
    if (has_field_ms < 0 ||
        (host_field && (host_field->kind != V_STR || host_field->len == 0 || host_field->escapes))) {
        Py_RETURN_NONE;
    }
    PyObject *text = decoded(text_field);
    if (text == NULL) {
        return NULL;
    }
    const char *t = (const char *)PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Header h;
    int has_ref = has_field_ms || has_kafka;
    if (!plain_text(t, n) || line_header(t, n, has_ref, has_field_ms ? field_ms : kafka, &h)) {
        Py_DECREF(text);
        Py_RETURN_NONE;
    }
    if (user_written && host_field) {
        h.has_ms = 0, h.host = NULL; /* log_record.USER_WRITTEN_SOURCES: the fields win */
    }
    int has_time = h.has_ms || has_field_ms || has_kafka;
    int64_t time_ms = h.has_ms ? h.ms : has_field_ms ? field_ms : kafka;
    if (!has_time || (h.host == NULL && host_field == NULL)) {
        Py_DECREF(text);
        Py_RETURN_NONE;
    }
    PyObject *host = h.host ? host_str(h.host, h.host_len) : host_str(host_field->start, host_field->len);
    PyObject *when = PyLong_FromLongLong(time_ms);
    if (host == NULL || when == NULL) {
        Py_DECREF(text);
        Py_XDECREF(host);
        Py_XDECREF(when);
        return NULL;
    }
    PyObject *result = PyTuple_New(3);
    if (result == NULL) {
        Py_DECREF(text);
        Py_DECREF(host);
        Py_DECREF(when);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, text);
    PyTuple_SET_ITEM(result, 1, host);
    PyTuple_SET_ITEM(result, 2, when);
    return result;
}

static PyObject *pick_fields(const char *raw, Py_ssize_t size, int user_written, int has_kafka, int64_t kafka) {
    Record record;
    if (read_record(raw, raw + size, &record)) {
        Py_RETURN_NONE;
    }
    return record_fields(&record, user_written, has_kafka, kafka);
}

/* pick(raw: bytes, source: str, kafka_ms: int, user_written: frozenset) -> tuple | None */
static PyObject *pick(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "pick(raw, source, kafka_ms, user_written_sources)");
        return NULL;
    }
    PyObject *raw = args[0];
    if (!PyBytes_CheckExact(raw) || PyBytes_GET_SIZE(raw) < 2 || PyBytes_AS_STRING(raw)[0] != '{' ||
        !PyLong_CheckExact(args[2])) {
        Py_RETURN_NONE;
    }
    int overflow = 0;
    long long kafka = PyLong_AsLongLongAndOverflow(args[2], &overflow);
    if (overflow || (kafka == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int user_written = PySet_Contains(args[3], args[1]);
    if (user_written < 0) {
        return NULL;
    }
    return pick_fields(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), user_written, kafka >= 0, kafka);
}

static PyObject *VALUE, *KEY, *HEADERS, *TIMESTAMP; /* interned attribute names */

/* pick_record(record, source, user_written) -> tuple | None: prefilter._common's own test (bytes
 * value, no key, no headers, an int timestamp) and pick, without a Python frame per record. */
static PyObject *pick_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "pick_record(record, source, user_written_sources)");
        return NULL;
    }
    PyObject *value = NULL, *key = NULL, *headers = NULL, *stamp = NULL, *result = NULL;
    value = PyObject_GetAttr(args[0], VALUE);
    key = value ? PyObject_GetAttr(args[0], KEY) : NULL;
    headers = key ? PyObject_GetAttr(args[0], HEADERS) : NULL;
    stamp = headers ? PyObject_GetAttr(args[0], TIMESTAMP) : NULL;
    if (stamp == NULL) {
        PyErr_Clear(); /* not a ConsumerRecord: the Python path says what it is */
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (!PyBytes_CheckExact(value) || key != Py_None || !PyLong_CheckExact(stamp)) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else {
        int has_headers = PyObject_IsTrue(headers);
        if (has_headers) {
            PyErr_Clear();
            Py_INCREF(Py_None);
            result = Py_None;
        } else {
            PyObject *call[4] = {value, args[1], stamp, args[2]};
            result = pick(module, call, 4);
        }
    }
    Py_XDECREF(value);
    Py_XDECREF(key);
    Py_XDECREF(headers);
    Py_XDECREF(stamp);
    return result;
}

/* ---- a recording line (streams/recording.py): the backtest's hot path ------------------------ */

enum { R_TOPIC, R_VALUE, R_KEY, R_TIMESTAMP, R_PARTITION, R_OFFSET, R_COUNT };
/* streams.records.TopicRecord's fields: a recording line with any other key is declined */
static const char *const RECORDING_KEYS[] = {"topic", "value", "key", "timestamp", "partition", "offset"};

static int recording_key(const char *s, Py_ssize_t n) {
    for (int i = 0; i < R_COUNT; i++) {
        if ((size_t)n == strlen(RECORDING_KEYS[i]) && memcmp(s, RECORDING_KEYS[i], (size_t)n) == 0) {
            return i;
        }
    }
    return -1;
}

typedef struct {
    Field field;
    const char *at; /* the value's JSON text */
    Py_ssize_t len;
} TopField;

/* A JSON integer's text that is its Python str as well (no sign: "-0" prints as "0"). */
static int plain_whole(const TopField *f) { return f->field.kind == V_INT && f->at[0] != '-'; }
static int is_null(const TopField *f) { return f->field.kind == V_OTHER && f->at[0] == 'n'; }

/* The recording line's top-level fields, and its value read into *record: the key count, or -1
 * to decline (anything but one flat object of TopicRecord's keys, each once). */
static int read_recording_line(const char *p, const char *end, TopField *top, Record *record) {
    int count = 0;
    memset(top, 0, sizeof(TopField) * R_COUNT);
    p = skip_ws(p + 1, end); /* line[0] is '{' */
    for (;;) {
        Field key;
        if (p >= end || *p != '"') {
            return -1;
        }
        p = read_string(p, end, &key);
        int which = p == NULL || key.escapes ? -1 : recording_key(key.start, key.len);
        if (which < 0 || top[which].at != NULL) {
            return -1;
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ':') {
            return -1;
        }
        p = skip_ws(p + 1, end);
        const char *at = p;
        if (which == R_VALUE) {
            p = p < end && *p == '{' ? read_object(p, end, record) : NULL; /* a string value: Python */
            top[which].field.kind = V_OTHER;
        } else {
            p = read_value(p, end, &top[which].field);
        }
        if (p == NULL) {
            return -1;
        }
        top[which].at = at;
        top[which].len = p - at;
        count++;
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}') {
            return skip_ws(p + 1, end) == end ? count : -1;
        }
        return -1;
    }
}

/* streams.recording._origin: "topic:partition:offset" when the line has more than four keys and
 * both of those, else "topic:@line_no". */
static PyObject *recording_origin(const TopField *top, int count, long long line_no) {
    char number[32];
    const Field *topic = &top[R_TOPIC].field;
    int numbered = count > 4 && top[R_PARTITION].at && top[R_OFFSET].at && !is_null(&top[R_PARTITION]) &&
                   !is_null(&top[R_OFFSET]);
    Py_ssize_t tail = numbered ? 2 + top[R_PARTITION].len + top[R_OFFSET].len
                               : 2 + snprintf(number, sizeof(number), "%lld", line_no);
    PyObject *origin = PyUnicode_New(topic->len + tail, 127);
    if (origin == NULL) {
        return NULL;
    }
    char *out = (char *)PyUnicode_1BYTE_DATA(origin);
    memcpy(out, topic->start, (size_t)topic->len);
    out += topic->len;
    *out++ = ':';
    if (numbered) {
        memcpy(out, top[R_PARTITION].at, (size_t)top[R_PARTITION].len);
        out += top[R_PARTITION].len;
        *out++ = ':';
        memcpy(out, top[R_OFFSET].at, (size_t)top[R_OFFSET].len);
    } else {
        *out++ = '@';
        memcpy(out, number, strlen(number));
    }
    return origin;
}

/* pick_line(line: bytes, line_no: int, log_sources: dict, user_written: frozenset) -> tuple | None
 *
 * One recording line (streams.recording.parse_recording_line) of a log topic, normalized as the
 * backtest's common_fields(source, value, None, timestamp, reference) normalizes it: (text, host,
 * time_ms, source, origin, timestamp), or None to decline. It answers only a line whose value is
 * an object it reads whole, with no key (absent or null), an int timestamp >= 0 (so the year
 * reference is the timestamp, as pick's k) and a topic in log_sources (topic -> source, the log
 * topics only); partition and offset, when present, are null or plain ints. The value's bytes
 * are what pick would read: orjson decodes them to the very dict the recording line holds. */
static PyObject *pick_line(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "pick_line(line, line_no, log_sources, user_written_sources)");
        return NULL;
    }
    PyObject *line = args[0];
    if (!PyBytes_CheckExact(line) || PyBytes_GET_SIZE(line) < 2 || PyBytes_AS_STRING(line)[0] != '{' ||
        !PyLong_CheckExact(args[1]) || !PyDict_CheckExact(args[2])) {
        Py_RETURN_NONE;
    }
    long long line_no = PyLong_AsLongLong(args[1]);
    if (line_no == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    TopField top[R_COUNT];
    Record record;
    const char *start = PyBytes_AS_STRING(line);
    int count = read_recording_line(start, start + PyBytes_GET_SIZE(line), top, &record);
    if (count < 0 || top[R_TOPIC].field.kind != V_STR || top[R_TOPIC].field.escapes || top[R_VALUE].at == NULL ||
        (top[R_KEY].at && !is_null(&top[R_KEY])) || !top[R_TIMESTAMP].at || !plain_whole(&top[R_TIMESTAMP]) ||
        (top[R_PARTITION].at && !is_null(&top[R_PARTITION]) && !plain_whole(&top[R_PARTITION])) ||
        (top[R_OFFSET].at && !is_null(&top[R_OFFSET]) && !plain_whole(&top[R_OFFSET]))) {
        Py_RETURN_NONE;
    }
    int64_t stamp = 0; /* read_number: at most 17 digits */
    for (Py_ssize_t i = 0; i < top[R_TIMESTAMP].len; i++) {
        stamp = stamp * 10 + (top[R_TIMESTAMP].at[i] - '0');
    }
    PyObject *topic = host_str(top[R_TOPIC].field.start, top[R_TOPIC].field.len);
    if (topic == NULL) {
        return NULL;
    }
    PyObject *source = PyDict_GetItemWithError(args[2], topic); /* borrowed */
    Py_DECREF(topic);
    if (source == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE; /* the scheduler's topic, or one the caller has not mapped yet */
    }
    int user_written = PySet_Contains(args[3], source);
    if (user_written < 0) {
        return NULL;
    }
    PyObject *fields = record_fields(&record, user_written, 1, stamp);
    if (fields == NULL || fields == Py_None) {
        return fields;
    }
    PyObject *origin = recording_origin(top, count, line_no);
    PyObject *when = origin ? PyLong_FromLongLong(stamp) : NULL;
    PyObject *result = when ? PyTuple_New(6) : NULL;
    if (result == NULL) {
        Py_DECREF(fields);
        Py_XDECREF(origin);
        Py_XDECREF(when);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        PyObject *item = PyTuple_GET_ITEM(fields, i);
        Py_INCREF(item);
        PyTuple_SET_ITEM(result, i, item);
    }
    Py_DECREF(fields);
    Py_INCREF(source);
    PyTuple_SET_ITEM(result, 3, source);
    PyTuple_SET_ITEM(result, 4, origin);
    PyTuple_SET_ITEM(result, 5, when);
    return result;
}

static PyMethodDef METHODS[] = {
    {"pick_record", (PyCFunction)(void (*)(void))pick_record, METH_FASTCALL,
     "pick_record(record, source, user_written_sources): pick() of a ConsumerRecord's value, when it "
     "has no key, no headers and an int timestamp (streams.prefilter._common's fast case); else None."},
    {"pick_line", (PyCFunction)(void (*)(void))pick_line, METH_FASTCALL,
     "pick_line(line, line_no, log_sources, user_written_sources): a recording line's (text, host, "
     "time_ms, source, origin, timestamp) as the backtest normalizes it, or None: decline."},
    {"pick", (PyCFunction)(void (*)(void))pick, METH_FASTCALL,
     "pick(raw, source, kafka_ms, user_written_sources): common_json_fields' (text, host, time_ms), "
     "or None: decline (the Python path decides)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_fastpick", "The common shipper record's fields, picked in C.", -1, METHODS,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastpick(void) {
    VALUE = PyUnicode_InternFromString("value");
    KEY = PyUnicode_InternFromString("key");
    HEADERS = PyUnicode_InternFromString("headers");
    TIMESTAMP = PyUnicode_InternFromString("timestamp");
    if (!VALUE || !KEY || !HEADERS || !TIMESTAMP) {
        return NULL;
    }
    return PyModule_Create(&MODULE);
}
