//! The page's inline style sheet: one string, shared by the status page and
//! a job's page, and the colour of every kind of mark
//! ([`super::marks::Kind`]) beside it. Nothing here is loaded from
//! elsewhere: no font, no image, no script.

/// The style sheet, without the marks' colours ([`super::marks::style`]).
pub(super) const STYLE: &str = "\
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;padding:1rem;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;\
color:#1d232a;background:#f3f5f7;overflow-wrap:anywhere}
header,main{max-width:72rem;margin:0 auto}
h1{font-size:1.35rem;margin:0 0 .25rem}
h2{font-size:1.1rem;margin:0;display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
h3{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:#58636e;margin:.9rem 0 .3rem}
.meta{color:#58636e;margin:0 0 1rem;font-size:.85rem}
.banner{background:#fde8e8;border:1px solid #e0a3a3;border-radius:6px;padding:.5rem .75rem;margin:0 0 1rem}
.jobs{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,24rem),1fr));gap:1rem}
.job{min-width:0;background:#fff;border:1px solid #d8dee4;border-left:6px solid #8c959f;border-radius:8px;padding:.8rem 1rem}
.job[data-state=disabled]{border-left-color:#57606a}
.job[data-state=paused]{border-left-color:#8c959f}
.job[data-state=running]{border-left-color:#1f6feb}
.job[data-state=hung]{border-left-color:#bc4c00}
.job[data-state=unknown]{border-left-color:#6e7781}
.job[data-state=overdue]{border-left-color:#bf8700}
.job[data-state=failing]{border-left-color:#cf222e}
.job[data-state=crashed]{border-left-color:#82071e}
.job[data-state=new]{border-left-color:#8250df}
.job[data-state=ok]{border-left-color:#2da44e}
.badge{font-size:.75rem;font-weight:600;text-transform:uppercase;padding:.1rem .45rem;border-radius:999px;background:#eaeef2}
.job[data-state=disabled] .badge{background:#d0d7de;color:#24292f}
.job[data-state=paused] .badge{background:#eaeef2;color:#424a53}
.job[data-state=running] .badge{background:#ddf4ff;color:#0550ae}
.job[data-state=hung] .badge{background:#fff1e5;color:#953800}
.job[data-state=unknown] .badge{background:#6e7781;color:#ffffff}
.job[data-state=overdue] .badge{background:#fff8c5;color:#7d4e00}
.job[data-state=failing] .badge{background:#ffebe9;color:#a40e26}
.job[data-state=crashed] .badge{background:#82071e;color:#ffffff}
.job[data-state=new] .badge{background:#fbefff;color:#6639ba}
.job[data-state=ok] .badge{background:#dafbe1;color:#116329}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.15rem .75rem;margin:.6rem 0 0}
dt{color:#58636e}
dd{margin:0;min-width:0}
ol,ul{margin:0;padding-left:1.2rem}
li{margin:.1rem 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em}
time,.age{white-space:nowrap}
.fence{display:inline-block;max-width:12ch;overflow:hidden;text-overflow:ellipsis;\
white-space:nowrap;vertical-align:bottom}
.clamp{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:3;line-clamp:3;overflow:hidden}
.logout{margin:0 0 1rem}
.logout button{font:inherit;font-size:.85rem;padding:.15rem .6rem;border:1px solid #8c959f;border-radius:6px;background:#fff;cursor:pointer}
.ok{color:#116329}
.bad{color:#a40e26}
.none{color:#58636e}
@media (max-width:30rem){body{padding:.6rem}dl{grid-template-columns:minmax(0,1fr)}dt{margin-top:.3rem}}
.legend{display:flex;flex-wrap:wrap;gap:.2rem .9rem;list-style:none;padding:0;margin:0 0 1rem;font-size:.8rem;color:#424a53}
.legend li{display:flex;align-items:center;gap:.3rem;margin:0}
.swatch{display:inline-block;width:.7rem;height:.9rem;border-radius:2px}
.strip,.tl-bars{display:block;width:100%;overflow:hidden}
.strip{height:3rem;margin:.2rem 0 0;background:#f6f8fa;border-radius:4px}
.strip .hit,.chart .hit{fill:transparent}
.strip a:hover .bar,.strip a:focus .bar,.tl-bars a:hover rect{opacity:.7}
.k-missed{fill:#eaeef2;stroke:#57606a;stroke-dasharray:3 2}
.swatch.k-missed{background:#eaeef2;border:1px dashed #57606a}
.timeline{margin:1.5rem 0 0;background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:.8rem 1rem}
.timeline p{margin:.2rem 0 .6rem;font-size:.85rem;color:#58636e}
.tl-row{display:grid;grid-template-columns:minmax(0,10rem) minmax(0,1fr);gap:.1rem .6rem;align-items:center;margin:.25rem 0}
.tl-name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:.85rem}
.tl-bars{height:1.1rem;background:#f6f8fa;border-radius:3px}
.tl-bars line{stroke:#d0d7de}
.tl-bars .wait{fill:#8c959f}
.tl-bars .unread{fill:#eaeef2}
.tl-axis{position:relative;height:1.2rem;font-size:.75rem;color:#58636e}
.tl-axis span{position:absolute;top:0;white-space:nowrap;transform:translateX(-50%)}
.tl-axis span:first-child{transform:none}
.tl-axis span:last-child{transform:translateX(-100%)}
.tl-scale{display:grid;grid-template-columns:minmax(0,10rem) minmax(0,1fr);gap:.6rem}
nav.back{margin:0 0 .5rem;font-size:.9rem}
.panel{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:.8rem 1rem;margin:1rem 0 0;min-width:0}
.panel h2{margin:0 0 .5rem}
.chart{display:block;width:100%;height:auto;background:#f6f8fa;border-radius:4px}
.chart line{stroke:#d0d7de;stroke-width:1}
.chart polyline{fill:none;stroke:#8c959f;stroke-width:1.5}
.axis{display:flex;justify-content:space-between;gap:.5rem;flex-wrap:wrap;font-size:.75rem;color:#58636e}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #eaeef2;vertical-align:top}
th{color:#58636e;font-weight:600}
tr:target{background:#fff8c5}
td .swatch{vertical-align:-.1rem;margin-right:.3rem}
pre.log{margin:0;padding:.6rem;background:#1d232a;color:#e6edf3;border-radius:6px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;\
white-space:pre-wrap;overflow-wrap:anywhere;max-height:32rem;overflow-y:auto}
@media (max-width:40rem){.tl-row,.tl-scale{grid-template-columns:minmax(0,1fr)}.tl-scale>:first-child{display:none}\
table,tbody,tr,td{display:block}thead{display:none}tr{border-bottom:1px solid #d8dee4;padding:.3rem 0}\
td{border:0;padding:.1rem 0;display:grid;grid-template-columns:7rem minmax(0,1fr);gap:.5rem}\
td::before{content:attr(data-label);color:#58636e}}
";
