// A network delay line between two network namespaces, for the NFS fixture
// (tests/e2e/nfs_fixture.sh, docs/nfs.md): this kernel has no sch_netem, so `tc ... netem delay`
// is not available. The line is a TUN device in each namespace; this process reads each packet
// from one and writes it into the other once DELAY_US microseconds have passed. Order is kept
// (a fixed delay is a FIFO); a full queue drops, as a link would.
//
// usage: dspack-delay-line NETNS_A DEV_A NETNS_B DEV_B DELAY_US
// It creates both devices and prints "ready" on stdout; the caller gives them addresses and
// brings them up (ip -n NETNS addr add ... dev DEV). The devices go away when it exits
// (SIGTERM or SIGINT).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

enum { kMaxPacket = 65536, kQueueBytes = 64 << 20 };

struct Packet {
  uint64_t due_ns;
  uint32_t len;
  struct Packet* next;
  unsigned char data[];
};

struct Queue {
  struct Packet *head, *tail;
  size_t bytes;
};

static volatile sig_atomic_t stop;
static void OnSignal(int sig) { (void)sig; stop = 1; }

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void Die(const char* what) {
  fprintf(stderr, "dspack-delay-line: %s: %s\n", what, strerror(errno));
  exit(2);
}

// Opens a TUN device named dev inside the network namespace netns (ip netns's /run/netns/NAME).
static int OpenTun(const char* netns, const char* dev) {
  char path[256];
  snprintf(path, sizeof(path), "/run/netns/%s", netns);
  int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) Die(path);
  if (setns(nsfd, CLONE_NEWNET) != 0) Die("setns");
  close(nsfd);
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) Die("/dev/net/tun");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof(ifr));
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev);
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) Die(dev);
  return fd;
}

// Reads every packet waiting on from into q, due delay_ns from now.
static void Drain(int from, struct Queue* q, uint64_t delay_ns) {
  static unsigned char buf[kMaxPacket];
  for (;;) {
    ssize_t n = read(from, buf, sizeof(buf));
    if (n <= 0) return;
    if (q->bytes + (size_t)n > kQueueBytes) continue;  // the line is full: dropped
    struct Packet* p = malloc(sizeof(*p) + (size_t)n);
    if (!p) continue;
    p->due_ns = NowNs() + delay_ns;
    p->len = (uint32_t)n;
    p->next = NULL;
    memcpy(p->data, buf, (size_t)n);
    if (q->tail) q->tail->next = p; else q->head = p;
    q->tail = p;
    q->bytes += (size_t)n;
  }
}

// Writes the packets of q that are due into to; returns the ns until the next one (-1: none).
static int64_t Deliver(struct Queue* q, int to) {
  uint64_t now = NowNs();
  while (q->head && q->head->due_ns <= now) {
    struct Packet* p = q->head;
    ssize_t w = write(to, p->data, p->len);
    if (w < 0 && errno == EAGAIN) return 50000;  // the device is busy: try again shortly
    q->head = p->next;
    if (!q->head) q->tail = NULL;
    q->bytes -= p->len;
    free(p);
  }
  return q->head ? (int64_t)(q->head->due_ns - now) : -1;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: dspack-delay-line NETNS_A DEV_A NETNS_B DEV_B DELAY_US\n");
    return 2;
  }
  uint64_t delay_ns = strtoull(argv[5], NULL, 10) * 1000u;
  int a = OpenTun(argv[1], argv[2]);
  int b = OpenTun(argv[3], argv[4]);
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  printf("ready\n");
  fflush(stdout);
  struct Queue ab = {0}, ba = {0};  // a -> b, b -> a
  while (!stop) {
    int64_t wait_ab = Deliver(&ab, b), wait_ba = Deliver(&ba, a);
    int64_t wait = wait_ab < 0 ? wait_ba : (wait_ba < 0 || wait_ab < wait_ba ? wait_ab : wait_ba);
    struct pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    // ppoll for sub-millisecond precision: the delays are 0.5-2 ms.
    struct timespec ts = {0, 0}, *tsp = NULL;
    if (wait >= 0) {
      ts.tv_sec = wait / 1000000000;
      ts.tv_nsec = wait % 1000000000;
      tsp = &ts;
    }
    if (ppoll(fds, 2, tsp, NULL) < 0 && errno != EINTR) Die("ppoll");
    if (fds[0].revents & POLLIN) Drain(a, &ab, delay_ns);
    if (fds[1].revents & POLLIN) Drain(b, &ba, delay_ns);
  }
  return 0;
}
