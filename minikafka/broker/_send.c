/* The send thread: answers leave the broker from a thread of their own, outside the GIL.
 *
 * Why: with many connections each sending small requests, the event loop's one thread spent
 * ~29 % of its time in the socket send (perf: the loopback send runs the receiver's whole TCP
 * path and wakes the client's thread, all in the sender's system call). Kafka's network threads
 * do their sends beside the request handlers; this thread does the same for minikafka: the loop
 * hands an answer over (one copy, none for a large immutable part: HOLD_ABOVE; one lock) and goes on
 * with the next request.
 *
 * The contract, per connection (attached by its socket's fd; the thread sends on a duplicate):
 * - bytes handed over are sent in the order handed over, completely, or not at all once the
 *   socket fails (the error is kept, and every later `send` is dropped);
 * - `detach(key)` returns only when this thread no longer touches the socket (dropping what was
 *   not sent) and has closed its duplicate;
 * - `watch(fd)` asks for the fd to appear in `drained()` once nothing of it is pending (or it
 *   failed); the `wakeup_fd` (an eventfd) becomes readable then, for the event loop to watch.
 *
 * The thread sleeps in epoll_wait on an eventfd (new work) and on the sockets whose buffer was
 * full (EPOLLOUT, one shot). The Python reference (broker/send_thread.py's inline path, the
 * event loop's own transport) does the same job on the loop's thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_IOV 64
#define MAX_EVENTS 64

/* An answer part at least this long whose buffer cannot change (a bytes object, or a view of
 * one) is not copied: the queue holds the buffer until the part is sent or dropped. A Fetch answer
 * over many partitions comes as its parts, ~1 MB of records each (fetch_response.GATHER_ABOVE);
 * copying them into the queue cost the loop's thread a pass over every byte served, 10-15 % of
 * the broker's CPU per GB read across 10 and 100 partitions (issue 17, measured alternated).
 * Smaller parts are copied: their buffers are freed at once. */
#define HOLD_ABOVE (64 * 1024)

/* While answers keep coming, the thread naps between looks at its queue rather than sleeping until
 * poked: at 100 busy connections 86 % of hand-overs found it asleep, and each poke (an eventfd
 * write that wakes another CPU) cost the event loop's thread more than the hand-over itself. The
 * nap adds at most NAP_NS to an answer under load; after NAPS_BEFORE_SLEEP naps without work it
 * sleeps until poked again (an idle broker costs nothing). */
#define NAP_NS 150000
#define NAPS_BEFORE_SLEEP 50
enum { AWAKE, NAPPING, SLEEPING };

typedef struct chunk {
    struct chunk *next;
    size_t len, off;
    const char *base;  /* the bytes to send: data[] below, or a held object's buffer */
    int held;          /* base is view.buf, released by the loop's thread (release_chunks) */
    Py_buffer view;
    char data[];
} chunk;

typedef struct conn {
    int fd;
    chunk *head, *tail;
    size_t pending;     /* bytes handed over and not yet sent */
    int err;            /* errno of the failed send, 0 while healthy */
    int in_ready;       /* on the ready list */
    int armed;          /* registered for EPOLLOUT (its buffer was full) */
    int registered;     /* ever added to the epoll set (MOD rather than ADD) */
    int watched;        /* report in drained() when pending reaches 0 */
    struct conn *next_ready;
} conn;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t lock;
    pthread_cond_t idle_cond;  /* signalled when the thread leaves a send (detach waits on it) */
    pthread_t thread;
    int thread_started;
    int stop;
    int epfd;
    int work_fd;    /* eventfd: the loop has handed over work */
    int wakeup_fd;  /* eventfd: some watched connection drained */
    int sleeping;   /* AWAKE, NAPPING (looks again within NAP_NS) or SLEEPING (until poked) */
    int busy_fd;    /* the fd the thread is sending on right now, -1 if none */
    conn **conns;   /* indexed by fd */
    int n_conns;
    conn *ready_head, *ready_tail;
    chunk *released; /* held chunks done with (sent or dropped): their views need the GIL */
    int *drained;   /* fds to report */
    int n_drained, cap_drained;
    unsigned long long sends, wakeups, inline_sends, held_parts;
    long long inline_gap_ns;  /* a send this long after the previous one goes out inline */
    long long last_send_ns;
    int last_send_fd;         /* the connection of the previous answer */
} SendThread;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Called with the lock held (or by the only thread left): a chunk is done with. A held one waits
 * on the released list for the loop's thread, which alone may touch Python objects. */
static void drop_chunk(SendThread *st, chunk *ch)
{
    if (ch->held) {
        ch->next = st->released;
        st->released = ch;
    } else {
        free(ch);
    }
}

static void free_chunks(SendThread *st, conn *c)
{
    chunk *ch = c->head;
    while (ch) {
        chunk *next = ch->next;
        drop_chunk(st, ch);
        ch = next;
    }
    c->head = c->tail = NULL;
    c->pending = 0;
}

/* With the GIL held: frees a list of chunks, releasing the views of the held ones. */
static void release_chunks(chunk *ch)
{
    while (ch) {
        chunk *next = ch->next;
        if (ch->held)
            PyBuffer_Release(&ch->view);
        free(ch);
        ch = next;
    }
}

/* With the GIL held: the held chunks done with, released. The loop's entry points call it (send()
 * takes the list inside its own locked section), so a sent answer's records live until the next
 * call at most. */
static void reclaim(SendThread *st)
{
    pthread_mutex_lock(&st->lock);
    chunk *ch = st->released;
    st->released = NULL;
    pthread_mutex_unlock(&st->lock);
    release_chunks(ch);
}

static void push_ready(SendThread *st, conn *c)
{
    if (c->in_ready)
        return;
    c->in_ready = 1;
    c->next_ready = NULL;
    if (st->ready_tail)
        st->ready_tail->next_ready = c;
    else
        st->ready_head = c;
    st->ready_tail = c;
}

static void remove_ready(SendThread *st, conn *c)
{
    if (!c->in_ready)
        return;
    conn *prev = NULL, *it = st->ready_head;
    while (it && it != c) {
        prev = it;
        it = it->next_ready;
    }
    if (it) {
        if (prev)
            prev->next_ready = it->next_ready;
        else
            st->ready_head = it->next_ready;
        if (st->ready_tail == it)
            st->ready_tail = prev;
    }
    c->in_ready = 0;
    c->next_ready = NULL;
}

static void poke(int fd)
{
    uint64_t one = 1;
    ssize_t rc;
    do {
        rc = write(fd, &one, sizeof one);
    } while (rc < 0 && errno == EINTR);
}

/* Called with the lock held: the connection has nothing pending (or failed). */
static void maybe_report(SendThread *st, conn *c)
{
    if (!c->watched || (c->pending > 0 && c->err == 0))
        return;
    if (st->n_drained == st->cap_drained) {
        int cap = st->cap_drained ? st->cap_drained * 2 : 64;
        int *grown = realloc(st->drained, (size_t)cap * sizeof(int));
        if (!grown)
            return; /* out of memory: still watched, reported at the next look */
        st->drained = grown;
        st->cap_drained = cap;
    }
    c->watched = 0;
    int was_empty = st->n_drained == 0;
    st->drained[st->n_drained++] = c->fd;
    if (was_empty)
        poke(st->wakeup_fd);
}

/* Called with the lock held; drops it around the system call. */
static void send_some(SendThread *st, conn *c)
{
    struct iovec iov[MAX_IOV];
    int n = 0;
    for (chunk *ch = c->head; ch && n < MAX_IOV; ch = ch->next, n++) {
        iov[n].iov_base = (char *)ch->base + ch->off;
        iov[n].iov_len = ch->len - ch->off;
    }
    int fd = c->fd;
    st->busy_fd = fd;
    pthread_mutex_unlock(&st->lock);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)n;
    ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    int e = sent < 0 ? errno : 0;
    pthread_mutex_lock(&st->lock);
    st->busy_fd = -1;
    st->sends++;
    pthread_cond_broadcast(&st->idle_cond);
    /* The chunks sent from are still this connection's: detach waits for busy_fd to clear. */
    if (sent > 0) {
        size_t left = (size_t)sent;
        c->pending -= left;
        while (left > 0 && c->head) {
            chunk *ch = c->head;
            size_t avail = ch->len - ch->off;
            if (left >= avail) {
                left -= avail;
                c->head = ch->next;
                drop_chunk(st, ch);
            } else {
                ch->off += left;
                left = 0;
            }
        }
        if (!c->head)
            c->tail = NULL;
    } else if (e == EAGAIN || e == EWOULDBLOCK) {
        /* The socket's buffer is full: wait for room (one shot). The duplicate is this
         * connection's own, so `registered` says exactly whether the epoll set holds it. */
        struct epoll_event ev;
        ev.events = EPOLLOUT | EPOLLONESHOT;
        ev.data.fd = fd;
        if (epoll_ctl(st->epfd, c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) == 0) {
            c->registered = 1;
            c->armed = 1;
            return;
        }
        e = errno;
    } else if (e == EINTR) {
        e = 0; /* try again from the ready list */
    }
    if (e != 0) { /* the socket failed (or could not be watched): drop what is queued */
        c->err = e;
        free_chunks(st, c);
    }
    if (c->pending > 0 && c->err == 0 && !c->armed)
        push_ready(st, c);
    else
        maybe_report(st, c);
}

/* epoll_wait for at most NAP_NS (epoll_pwait2, Linux 5.11), or 1 ms where that is missing. */
static int nap(int epfd, struct epoll_event *events)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    static int have_pwait2 = 1;
    if (have_pwait2) {
        struct timespec ts = {0, NAP_NS};
        int n = epoll_pwait2(epfd, events, MAX_EVENTS, &ts, NULL);
        if (n >= 0 || errno != ENOSYS)
            return n;
        have_pwait2 = 0;
    }
#endif
    return epoll_wait(epfd, events, MAX_EVENTS, 1);
}

static void *thread_main(void *arg)
{
    SendThread *st = (SendThread *)arg;
    struct epoll_event events[MAX_EVENTS];
    int idle_naps = NAPS_BEFORE_SLEEP;
    pthread_mutex_lock(&st->lock);
    while (!st->stop) {
        if (st->ready_head)
            idle_naps = 0;
        while (st->ready_head && !st->stop) {
            conn *c = st->ready_head;
            st->ready_head = c->next_ready;
            if (!st->ready_head)
                st->ready_tail = NULL;
            c->in_ready = 0;
            c->next_ready = NULL;
            if (c->pending == 0 || c->err != 0 || c->armed) {
                maybe_report(st, c);
                continue;
            }
            send_some(st, c);
        }
        if (st->stop)
            break;
        int napping = idle_naps < NAPS_BEFORE_SLEEP;
        st->sleeping = napping ? NAPPING : SLEEPING;
        pthread_mutex_unlock(&st->lock);
        int n = napping ? nap(st->epfd, events) : epoll_wait(st->epfd, events, MAX_EVENTS, -1);
        pthread_mutex_lock(&st->lock);
        st->sleeping = AWAKE;
        if (napping && n == 0)
            idle_naps++;
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == st->work_fd) {
                uint64_t v;
                ssize_t rc = read(st->work_fd, &v, sizeof v);
                (void)rc;
                continue;
            }
            /* A stale event for a detached fd finds no connection (or a new one): harmless. */
            if (fd >= 0 && fd < st->n_conns && st->conns[fd]) {
                conn *c = st->conns[fd];
                c->armed = 0;
                if (c->pending > 0 && c->err == 0)
                    push_ready(st, c);
            }
        }
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* A descriptor number from Python: -1 with an exception set when it is not an int in range. */
static int as_fd(PyObject *o)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "not a descriptor: %ld", v);
        return -1;
    }
    return (int)v;
}

static conn *lookup(SendThread *st, int fd)
{
    return (fd >= 0 && fd < st->n_conns) ? st->conns[fd] : NULL;
}

/* attach(fd) -> key: this thread sends on its own duplicate of the socket (the key), so a socket
 * the event loop closes early (a reset seen by the reader) stays this socket until detach, and
 * its number cannot be reused meanwhile by a new connection. */
static PyObject *st_attach(SendThread *st, PyObject *arg)
{
    int original = as_fd(arg);
    if (original < 0)
        return NULL;
    conn *c = calloc(1, sizeof(conn));
    if (!c)
        return PyErr_NoMemory();
    int fd = fcntl(original, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        free(c);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    c->fd = fd;
    pthread_mutex_lock(&st->lock);
    if (fd >= st->n_conns) {
        int n = st->n_conns ? st->n_conns : 256;
        while (n <= fd)
            n *= 2;
        conn **grown = realloc(st->conns, (size_t)n * sizeof(conn *));
        if (!grown) {
            pthread_mutex_unlock(&st->lock);
            close(fd);
            free(c);
            return PyErr_NoMemory();
        }
        memset(grown + st->n_conns, 0, (size_t)(n - st->n_conns) * sizeof(conn *));
        st->conns = grown;
        st->n_conns = n;
    }
    st->conns[fd] = c; /* a fresh duplicate: no other connection can hold this number */
    pthread_mutex_unlock(&st->lock);
    return PyLong_FromLong(fd);
}

/* The inline path: when the loop is not busy (the previous answer left more than inline_gap_ns
 * ago, or ten times that for another connection; see st_send) and nothing of this connection is
 * queued, the loop's thread sends the answer itself, as its transport would: at one connection a
 * hand-over would only add the thread's wake-up to every round trip. Returns how many bytes went
 * out, or -errno. Called with the lock not held; only the event loop's thread calls send(), so
 * nothing is queued behind this one meanwhile. */
static ssize_t send_inline(int fd, const char *buf, size_t len)
{
    ssize_t sent;
    do {
        sent = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -(ssize_t)errno;
    return sent;
}

/* True when nothing can change o's buffer while it is queued: a bytes object, or a view of one
 * (a Fetch read cut at its last whole batch is memoryview(data)[:end]). */
static int immutable_buffer(PyObject *o)
{
    if (PyBytes_CheckExact(o))
        return 1;
    if (!PyMemoryView_Check(o))
        return 0;
    PyObject *base = PyMemoryView_GET_BASE(o);
    return base != NULL && PyBytes_CheckExact(base);
}

/* send(fd, data) -> bytes pending for fd after this, or -errno once the socket failed.
 * Only the event loop's thread calls it. */
static PyObject *st_send(SendThread *st, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "send(fd, data)");
        return NULL;
    }
    int fd = as_fd(args[0]);
    if (fd < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *buf = (const char *)view.buf;
    size_t len = (size_t)view.len;
    long long now = now_ns();
    long long gap = now - st->last_send_ns;
    /* Quiet: the previous answer left long enough ago. An answer to another connection than the
     * previous one needs a gap ten times as long: with many clients the loop is busy even when its
     * answers are spaced (1,000 transactional producers: ~140 us apart at 99 % CPU), and each
     * inline loopback send costs it the receiver's whole TCP path. */
    int quiet = st->inline_gap_ns < 0 ||
                (gap > st->inline_gap_ns && (fd == st->last_send_fd || gap / 10 > st->inline_gap_ns));
    st->last_send_ns = now;
    st->last_send_fd = fd;
    if (quiet && len > 0 && !st->stop) {
        pthread_mutex_lock(&st->lock);
        conn *c = lookup(st, fd);
        int direct = c && c->pending == 0 && c->err == 0 && !c->armed;
        pthread_mutex_unlock(&st->lock);
        if (direct) {
            ssize_t sent = send_inline(fd, buf, len);
            if (sent < 0) {
                pthread_mutex_lock(&st->lock);
                c->err = (int)-sent;
                pthread_mutex_unlock(&st->lock);
                PyBuffer_Release(&view);
                return PyLong_FromLongLong((long long)sent);
            }
            st->inline_sends++;
            buf += sent;
            len -= (size_t)sent;
        }
    }
    chunk *ch = NULL;
    int hold = len >= HOLD_ABOVE && immutable_buffer(args[1]);
    if (len > 0) {
        ch = malloc(sizeof(chunk) + (hold ? 0 : len));
        if (!ch) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
        ch->next = NULL;
        ch->len = len;
        ch->off = 0;
        ch->held = hold;
        if (hold) {
            ch->view = view; /* released once the part is sent or dropped (release_chunks) */
            ch->base = buf;
            st->held_parts++;
        } else {
            memcpy(ch->data, buf, len);
            ch->base = ch->data;
        }
    }
    if (!ch || !ch->held)
        PyBuffer_Release(&view);
    int wake = 0;
    pthread_mutex_lock(&st->lock);
    chunk *done = st->released; /* released below, after the lock: no second lock for reclaim() */
    st->released = NULL;
    conn *c = lookup(st, fd);
    /* Not attached, a failed socket, or a thread that stopped (the broker's shutdown): dropped. */
    int dropped = !c || c->err || st->stop;
    if (ch && dropped) {
        ch->next = done;
        done = ch;
    } else if (ch) {
        if (c->tail)
            c->tail->next = ch;
        else
            c->head = ch;
        c->tail = ch;
        c->pending += ch->len;
        if (!c->armed && st->busy_fd != fd) {
            push_ready(st, c);
            wake = st->sleeping == SLEEPING; /* a napping thread looks again by itself */
            if (wake)
                st->sleeping = AWAKE; /* one poke per sleep is enough */
        }
    }
    long long result = !c ? 0 : dropped ? -(long long)(c->err ? c->err : EPIPE) : (long long)c->pending;
    pthread_mutex_unlock(&st->lock);
    release_chunks(done);
    if (!c) {
        PyErr_Format(PyExc_ValueError, "fd %d is not attached", fd);
        return NULL;
    }
    if (wake) {
        st->wakeups++;
        poke(st->work_fd);
    }
    return PyLong_FromLongLong(result);
}

/* pending(fd) -> bytes not yet sent, or -errno once the socket failed. */
static PyObject *st_pending(SendThread *st, PyObject *arg)
{
    int fd = as_fd(arg);
    if (fd < 0)
        return NULL;
    reclaim(st);
    pthread_mutex_lock(&st->lock);
    conn *c = lookup(st, fd);
    long long result = !c ? 0 : c->err ? -(long long)c->err : (long long)c->pending;
    pthread_mutex_unlock(&st->lock);
    return PyLong_FromLongLong(result);
}

/* watch(fd) -> True when fd is drained already (nothing pending, or failed); otherwise fd will
 * be listed by drained() once it is. */
static PyObject *st_watch(SendThread *st, PyObject *arg)
{
    int fd = as_fd(arg);
    if (fd < 0)
        return NULL;
    pthread_mutex_lock(&st->lock);
    conn *c = lookup(st, fd);
    int done = !c || c->pending == 0 || c->err != 0 || st->stop; /* nobody reports after a stop */
    if (!done)
        c->watched = 1;
    pthread_mutex_unlock(&st->lock);
    return PyBool_FromLong(done);
}

/* drained() -> the fds that drained (or failed) since the last call; clears the wakeup_fd. */
static PyObject *st_drained(SendThread *st, PyObject *Py_UNUSED(ignored))
{
    reclaim(st);
    uint64_t v;
    ssize_t rc = read(st->wakeup_fd, &v, sizeof v);
    (void)rc;
    pthread_mutex_lock(&st->lock);
    PyObject *out = PyList_New(st->n_drained);
    if (out) {
        for (int i = 0; i < st->n_drained; i++) {
            PyObject *n = PyLong_FromLong(st->drained[i]);
            if (!n) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, i, n);
        }
        if (out)
            st->n_drained = 0;
    }
    if (!out && st->n_drained > 0)
        poke(st->wakeup_fd); /* the list stays: make sure the loop asks again */
    pthread_mutex_unlock(&st->lock);
    return out;
}

/* detach(key) -> bytes dropped unsent. Closes the duplicate: after it returns this thread no
 * longer touches the socket. */
static PyObject *st_detach(SendThread *st, PyObject *arg)
{
    int fd = as_fd(arg);
    if (fd < 0)
        return NULL;
    long long dropped = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&st->lock);
    while (st->busy_fd == fd)
        pthread_cond_wait(&st->idle_cond, &st->lock);
    conn *c = lookup(st, fd);
    if (c) {
        st->conns[fd] = NULL;
        remove_ready(st, c);
        if (c->registered)
            epoll_ctl(st->epfd, EPOLL_CTL_DEL, fd, NULL);
        dropped = (long long)c->pending;
        free_chunks(st, c);
        free(c);
        close(fd);
        for (int i = 0; i < st->n_drained; i++) {
            if (st->drained[i] == fd) {
                st->drained[i] = st->drained[--st->n_drained];
                i--;
            }
        }
    }
    pthread_mutex_unlock(&st->lock);
    Py_END_ALLOW_THREADS
    reclaim(st);
    return PyLong_FromLongLong(dropped);
}

static void stop_thread(SendThread *st)
{
    if (!st->thread_started)
        return;
    pthread_mutex_lock(&st->lock);
    st->stop = 1;
    pthread_mutex_unlock(&st->lock);
    poke(st->work_fd);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(st->thread, NULL);
    Py_END_ALLOW_THREADS
    st->thread_started = 0;
}

static PyObject *st_close(SendThread *st, PyObject *Py_UNUSED(ignored))
{
    stop_thread(st);
    reclaim(st);
    Py_RETURN_NONE;
}

static PyObject *st_stats(SendThread *st, PyObject *Py_UNUSED(ignored))
{
    pthread_mutex_lock(&st->lock);
    unsigned long long sends = st->sends, wakeups = st->wakeups;
    int attached = 0;
    for (int i = 0; i < st->n_conns; i++)
        attached += st->conns[i] != NULL;
    pthread_mutex_unlock(&st->lock);
    return Py_BuildValue("{sKsKsKsKsi}", "sends", sends, "wakeups", wakeups, "inline_sends", st->inline_sends,
                         "held_parts", st->held_parts, "attached", attached);
}

/* SendThread(inline_gap_us=100): answers closer together than that are handed to the thread (ten
 * times that when the answer is for another connection than the previous one). */
static PyObject *st_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"inline_gap_us", NULL};
    long long gap_us = 100;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|L:SendThread", kwlist, &gap_us))
        return NULL;
    SendThread *st = (SendThread *)type->tp_alloc(type, 0);
    if (!st)
        return NULL;
    st->inline_gap_ns = gap_us < 0 ? -1 : gap_us * 1000;
    st->epfd = st->work_fd = st->wakeup_fd = -1;
    st->busy_fd = -1;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->idle_cond, NULL);
    st->epfd = epoll_create1(EPOLL_CLOEXEC);
    st->work_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    st->wakeup_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (st->epfd < 0 || st->work_fd < 0 || st->wakeup_fd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(st);
        return NULL;
    }
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.fd = st->work_fd;
    if (epoll_ctl(st->epfd, EPOLL_CTL_ADD, st->work_fd, &ev) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(st);
        return NULL;
    }
    /* The thread takes no process signals (they are the event loop's to handle). */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int rc = pthread_create(&st->thread, NULL, thread_main, st);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (rc != 0) {
        errno = rc;
        PyErr_SetFromErrno(PyExc_OSError);
        Py_DECREF(st);
        return NULL;
    }
    st->thread_started = 1;
    return (PyObject *)st;
}

static void st_dealloc(SendThread *st)
{
    stop_thread(st);
    for (int i = 0; i < st->n_conns; i++) {
        if (st->conns[i]) {
            free_chunks(st, st->conns[i]);
            free(st->conns[i]);
            close(i); /* the duplicate of a connection never detached */
        }
    }
    reclaim(st);
    free(st->conns);
    free(st->drained);
    if (st->epfd >= 0)
        close(st->epfd);
    if (st->work_fd >= 0)
        close(st->work_fd);
    if (st->wakeup_fd >= 0)
        close(st->wakeup_fd);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->idle_cond);
    Py_TYPE(st)->tp_free((PyObject *)st);
}

static PyObject *st_wakeup_fd(SendThread *st, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(st->wakeup_fd);
}

static PyMethodDef st_methods[] = {
    {"attach", (PyCFunction)st_attach, METH_O, "attach(fd) -> key: take answers for this socket"},
    {"send", (PyCFunction)(void (*)(void))st_send, METH_FASTCALL,
     "send(fd, data) -> bytes pending for fd (the data is copied), or -errno once the socket failed"},
    {"pending", (PyCFunction)st_pending, METH_O, "pending(fd) -> bytes not sent yet, or -errno"},
    {"watch", (PyCFunction)st_watch, METH_O, "watch(fd) -> True if drained now, else listed by drained() later"},
    {"drained", (PyCFunction)st_drained, METH_NOARGS, "drained() -> fds drained (or failed) since the last call"},
    {"detach", (PyCFunction)st_detach, METH_O, "detach(key) -> bytes dropped; the duplicate is closed"},
    {"close", (PyCFunction)st_close, METH_NOARGS, "stop the thread (pending data is dropped)"},
    {"stats", (PyCFunction)st_stats, METH_NOARGS, "counters: sends, wakeups, inline_sends, held_parts, attached"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef st_getset[] = {
    {"wakeup_fd", (getter)st_wakeup_fd, NULL, "eventfd readable when drained() has fds", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SendThreadType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minikafka.broker._send.SendThread",
    .tp_basicsize = sizeof(SendThread),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One thread that sends the answers handed over to it, in order per socket.",
    .tp_new = st_new,
    .tp_dealloc = (destructor)st_dealloc,
    .tp_methods = st_methods,
    .tp_getset = st_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_send", "The broker's send thread (see broker/send_thread.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__send(void)
{
    if (PyType_Ready(&SendThreadType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&SendThreadType);
    if (PyModule_AddObject(m, "SendThread", (PyObject *)&SendThreadType) < 0) {
        Py_DECREF(&SendThreadType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
