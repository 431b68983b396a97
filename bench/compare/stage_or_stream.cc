// Stage or stream? (bench/compare/stage_or_stream.h)
#include "bench/compare/stage_or_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "bench/compare/compare.h"
#include "src/human.h"
#include "src/stop.h"

namespace ds::bench {
namespace {

// Medians of the epochs' seconds and samples/s.
void Medians(const ReplayResult& r, double* epoch_seconds, double* samples_per_sec) {
  std::vector<double> sec, sps;
  for (const EpochResult& e : r.epochs) {
    sec.push_back(e.seconds);
    sps.push_back(e.seconds > 0 ? e.samples / e.seconds : 0);
  }
  *epoch_seconds = Median(std::move(sec));
  *samples_per_sec = Median(std::move(sps));
}

std::string Epochs(double e) { return fmt::format("{:.1f} epoch{}", e, e == 1 ? "" : "s"); }

}  // namespace

StageDecision DecideStage(double stage_seconds, double stream_epoch_seconds,
                          double local_epoch_seconds, int train_epochs) {
  StageDecision d;
  const double saved = stream_epoch_seconds - local_epoch_seconds;  // per epoch, by staging
  if (saved <= 0) {
    d.sentence = fmt::format(
        "stream: an epoch from remote storage ({}) is no slower than from the staged copy ({}), "
        "so staging ({}) never pays off",
        FormatDuration(stream_epoch_seconds), FormatDuration(local_epoch_seconds),
        FormatDuration(stage_seconds));
    return d;
  }
  const double e = stage_seconds / saved;
  d.break_even_epochs = e;
  const std::string why = fmt::format(
      "staging takes {} and saves {} an epoch ({} streamed, {} staged): it pays off after {}",
      FormatDuration(stage_seconds), FormatDuration(saved), FormatDuration(stream_epoch_seconds),
      FormatDuration(local_epoch_seconds), Epochs(e));
  if (train_epochs <= 0) {  // no plan given: any job of more than e epochs should stage
    d.stage = e < 1;
    d.sentence = fmt::format("stage if the job runs more than {}, else stream: {}", Epochs(e), why);
    return d;
  }
  d.stage = train_epochs > e;
  const double stream_total = train_epochs * stream_epoch_seconds;
  const double stage_total = stage_seconds + train_epochs * local_epoch_seconds;
  d.sentence =
      fmt::format("{} for {} epochs ({} streamed, {} staged): {}", d.stage ? "stage" : "stream",
                  train_epochs, FormatDuration(stream_total), FormatDuration(stage_total), why);
  return d;
}

Status RunStageOrStream(const StageOrStreamOptions& o, StageOrStreamResult* r,
                        const std::function<void(const std::string&)>& on_line) {
  if (!o.stage) return Status(Code::kInternal, "stage or stream: no stager (a bug in dsbench)");
  auto say = [&](const std::string& line) {
    if (on_line) on_line(line);
  };
  ReplayOptions stream = o.job;
  stream.dataset = o.url;
  DS_RETURN_IF_ERROR(RunReplay(stream, &r->stream));
  Medians(r->stream, &r->stream_epoch_seconds, &r->stream_samples_per_sec);
  say(fmt::format("stream {}: {} an epoch, {:.0f} samples/s", o.url,
                  FormatDuration(r->stream_epoch_seconds), r->stream_samples_per_sec));
  if (StopRequested()) {
    r->interrupted = true;
    return Status::Ok();
  }

  const auto t0 = std::chrono::steady_clock::now();
  DS_RETURN_IF_ERROR(o.stage(o.url, o.stage_dir));
  r->stage_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  say(fmt::format("stage {} -> {}: {}", o.url, o.stage_dir, FormatDuration(r->stage_seconds)));
  if (StopRequested()) {
    r->interrupted = true;
    return Status::Ok();
  }

  ReplayOptions local = o.job;
  local.dataset = o.stage_dir;
  local.cache = CacheState::kCold;
  DS_RETURN_IF_ERROR(RunReplay(local, &r->local));
  Medians(r->local, &r->local_epoch_seconds, &r->local_samples_per_sec);
  say(fmt::format("local {} (cold): {} an epoch, {:.0f} samples/s", o.stage_dir,
                  FormatDuration(r->local_epoch_seconds), r->local_samples_per_sec));
  r->decision = DecideStage(r->stage_seconds, r->stream_epoch_seconds, r->local_epoch_seconds,
                            o.train_epochs);
  return Status::Ok();
}

nlohmann::json StageOrStreamJson(const StageOrStreamOptions& o, const StageOrStreamResult& r) {
  nlohmann::json d = {{"stage", r.decision.stage},
                      {"recommendation", r.decision.sentence},
                      {"interrupted", r.interrupted}};
  d["break_even_epochs"] = r.decision.break_even_epochs
                               ? nlohmann::json(*r.decision.break_even_epochs)
                               : nlohmann::json();
  return {{"url", o.url},
          {"stage_dir", o.stage_dir},
          {"train_epochs", o.train_epochs},
          {"stream",
           {{"epoch_seconds", r.stream_epoch_seconds},
            {"samples_per_sec", r.stream_samples_per_sec},
            {"replay", ReplayJson(o.job, r.stream)}}},
          {"stage_seconds", r.stage_seconds},
          {"local",
           {{"epoch_seconds", r.local_epoch_seconds},
            {"samples_per_sec", r.local_samples_per_sec},
            {"replay", ReplayJson(o.job, r.local)}}},
          {"decision", d}};
}

std::string StageOrStreamText(const StageOrStreamOptions& o, const StageOrStreamResult& r) {
  std::string out = fmt::format("stage or stream: {} ({} samples, {})\n", o.url,
                                r.stream.dataset_samples, FormatBytes(r.stream.dataset_bytes));
  out += fmt::format("  stream from remote:      {:>10} an epoch  {:>8.0f} samples/s\n",
                     FormatDuration(r.stream_epoch_seconds), r.stream_samples_per_sec);
  out += fmt::format("  stage with dssync:       {:>10} once\n", FormatDuration(r.stage_seconds));
  out += fmt::format("  read the staged copy:    {:>10} an epoch  {:>8.0f} samples/s (cold)\n",
                     FormatDuration(r.local_epoch_seconds), r.local_samples_per_sec);
  if (r.decision.break_even_epochs) {
    out += fmt::format("  break-even: {:.1f} epochs\n", *r.decision.break_even_epochs);
  }
  if (r.interrupted) return out + "interrupted: no recommendation\n";
  out += "recommendation: " + r.decision.sentence + "\n";
  return out;
}

}  // namespace ds::bench
