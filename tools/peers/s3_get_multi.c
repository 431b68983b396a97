// The ceiling of S2 (docs/s3.md): a plain libcurl-multi harness that GETs every key of KEYFILE
// once, DEPTH requests in flight on one thread, signed by curl's own SigV4, bodies dropped.
// Prints "ops N seconds S ops_per_s R cpu_us_per_request C". The endpoint, region and keys come
// from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
//   cc -O2 -o s3_get_multi tools/peers/s3_get_multi.c -lcurl
//   s3_get_multi BUCKET KEYFILE DEPTH
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static size_t Drop(char* p, size_t s, size_t n, void* u) { (void)p; (void)u; return s * n; }

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static double Cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char** argv) {
  if (argc != 4) { fprintf(stderr, "usage: s3_get_multi BUCKET KEYFILE DEPTH\n"); return 2; }
  const char* endpoint = getenv("AWS_ENDPOINT_URL");
  const char* region = getenv("AWS_REGION") ? getenv("AWS_REGION") : "us-east-1";
  const char* ak = getenv("AWS_ACCESS_KEY_ID");
  const char* sk = getenv("AWS_SECRET_ACCESS_KEY");
  if (!endpoint || !ak || !sk) { fprintf(stderr, "set AWS_ENDPOINT_URL and the keys\n"); return 2; }
  FILE* f = fopen(argv[2], "r");
  if (!f) { perror(argv[2]); return 2; }
  size_t n = 0, cap = 1024;
  char** urls = malloc(cap * sizeof *urls);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!*line) continue;
    if (n == cap) urls = realloc(urls, (cap *= 2) * sizeof *urls);
    urls[n] = malloc(strlen(endpoint) + strlen(argv[1]) + strlen(line) + 3);
    sprintf(urls[n++], "%s/%s/%s", endpoint, argv[1], line);
  }
  fclose(f);
  const int depth = atoi(argv[3]);
  char sigv4[256], userpwd[512];
  snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", region);
  snprintf(userpwd, sizeof userpwd, "%s:%s", ak, sk);
  struct curl_slist* headers = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  CURL** easy = calloc(depth, sizeof *easy);
  size_t next = 0, done = 0, failed = 0;
  const double t0 = Now(), c0 = Cpu();
  for (int i = 0; i < depth; i++) {
    easy[i] = curl_easy_init();
    curl_easy_setopt(easy[i], CURLOPT_AWS_SIGV4, sigv4);
    curl_easy_setopt(easy[i], CURLOPT_USERPWD, userpwd);
    curl_easy_setopt(easy[i], CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy[i], CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, Drop);
    if (next < n) {
      curl_easy_setopt(easy[i], CURLOPT_URL, urls[next++]);
      curl_multi_add_handle(multi, easy[i]);
    }
  }
  while (done < n) {
    int running = 0, left = 0;
    curl_multi_perform(multi, &running);
    CURLMsg* m;
    while ((m = curl_multi_info_read(multi, &left))) {
      if (m->msg != CURLMSG_DONE) continue;
      long code = 0;
      curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      if (m->data.result != CURLE_OK || code != 200) failed++;
      done++;
      curl_multi_remove_handle(multi, m->easy_handle);
      if (next < n) {
        curl_easy_setopt(m->easy_handle, CURLOPT_URL, urls[next++]);
        curl_multi_add_handle(multi, m->easy_handle);
      }
    }
    if (done < n) curl_multi_poll(multi, NULL, 0, 100, NULL);
  }
  const double sec = Now() - t0, cpu = Cpu() - c0;
  printf("ops %zu seconds %.3f ops_per_s %.1f cpu_us_per_request %.1f failed %zu\n", n, sec,
         n / sec, cpu * 1e6 / n, failed);
  return failed ? 1 : 0;
}
