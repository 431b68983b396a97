// The compare report's style sheet, on its own (bench/compare/report_model.h).
#include "bench/compare/report_model.h"

namespace ds::bench::report {

namespace {
const char kCss[] = R"(
*{box-sizing:border-box} figure{margin:0} figcaption{font-weight:600;margin:6px 0 2px}
body{margin:0 auto;max-width:1200px;padding:24px 30px 40px;color:#1d2330;background:#fff;
 font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",sans-serif}
h1{font-size:24px;margin:0 0 2px} h3{font-size:15px;margin:16px 0 4px}
h2{font-size:18px;margin:30px 0 8px;border-bottom:1px solid #d9dee7;padding-bottom:4px}
.src{color:#5b6475;font:13px "DejaVu Sans Mono",monospace;margin:0 0 12px;overflow-wrap:anywhere}
.rec{background:#eef5fc;border-left:5px solid #1f77b4;padding:10px 16px;margin:12px 0 16px;
 font-size:17px;font-weight:600}
.rec ul{margin:6px 0 0;padding-left:20px;font-size:13px;font-weight:400}
.rec small{display:block;font-size:11px;letter-spacing:.06em;color:#5b6475;text-transform:uppercase}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:4px 24px;margin:0}
dl.facts div{display:flex;gap:10px} dt{color:#5b6475;min-width:80px} dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;margin:4px 0 10px;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid #e3e7ee;text-align:right;white-space:nowrap}
th{font-size:12px;color:#5b6475;font-weight:600;background:#f5f7fa}
th:nth-child(2),td:nth-child(2){text-align:left} tr.base td{color:#555;font-style:italic}
td.bar{background:linear-gradient(90deg,#d7e6f6 var(--w),transparent var(--w))}
td.bad{color:#b03a2e;font-weight:600}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px}
.note{color:#5b6475;margin:0 0 8px;font-size:13px} footer{margin-top:32px;color:#5b6475;font-size:12px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:12px 24px}
svg{max-width:100%;height:auto;display:block;font:12px "DejaVu Sans",sans-serif}
svg text{fill:#333} svg .tick{fill:#666;font-size:11px} svg .grid{stroke:#e8ebf0}
svg .axis{stroke:#888} svg .ref{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:6 4}
svg text.reft{fill:#c0392b} svg text.val{paint-order:stroke;stroke:#fff;stroke-width:3px}
)";

}  // namespace

const char* Css() { return kCss; }

}  // namespace ds::bench::report
