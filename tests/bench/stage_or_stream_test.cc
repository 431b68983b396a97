// bench/compare/stage_or_stream.h: the decision between streaming a remote dataset and staging it
// first, from epoch and staging times (no IO: tests/e2e/s3.sh runs the real thing).
#include "bench/compare/stage_or_stream.h"

#include <catch2/catch.hpp>

using ds::bench::DecideStage;

TEST_CASE("stage or stream: the break-even epoch count decides", "[bench]") {
  // Staging 60 s saves 10 s an epoch (30 s streamed, 20 s local): even after 6 epochs.
  auto d = DecideStage(60, 30, 20, 10);
  REQUIRE(d.break_even_epochs);
  CHECK(*d.break_even_epochs == Approx(6.0));
  CHECK(d.stage);  // 10 epochs: 300 s streamed, 260 s staged
  CHECK_THAT(d.sentence, Catch::StartsWith("stage for 10 epochs"));
  CHECK_THAT(d.sentence, Catch::Contains("after 6.0 epochs"));

  auto short_job = DecideStage(60, 30, 20, 3);  // 90 s streamed, 120 s staged
  CHECK_FALSE(short_job.stage);
  CHECK_THAT(short_job.sentence, Catch::StartsWith("stream for 3 epochs"));

  auto no_plan = DecideStage(60, 30, 20, 0);
  CHECK(*no_plan.break_even_epochs == Approx(6.0));
  CHECK_THAT(no_plan.sentence, Catch::StartsWith("stage if the job runs more than 6.0 epochs"));
}

TEST_CASE("stage or stream: streaming as fast as local never stages", "[bench]") {
  auto d = DecideStage(5, 10, 10, 100);
  CHECK_FALSE(d.break_even_epochs);
  CHECK_FALSE(d.stage);
  CHECK_THAT(d.sentence, Catch::StartsWith("stream: "));
  CHECK_THAT(d.sentence, Catch::Contains("never pays off"));
  CHECK_FALSE(DecideStage(5, 8, 10, 100).stage);  // remote faster than local (a fast store)
}
