/** The dashboard's stylesheet, served from memory (no build step, no CDN, system fonts only). */
export const DASHBOARD_CSS = `
:root { --bg: #f6f7f9; --panel: #fff; --text: #1d2330; --muted: #6b7385; --line: #e2e5eb; --accent: #2f5bea;
  --ok: #1f9d55; --bad: #d64545; --warn: #c98a00; --info: #6f42c1; --radius: 8px;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; color: var(--text); }
@media (prefers-color-scheme: dark) {
  :root { --bg: #12151c; --panel: #1b1f29; --text: #e6e9ef; --muted: #9aa3b5; --line: #2b3040; --accent: #7b9bff; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 16px; padding: 10px 20px; background: var(--panel);
  border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 2; }
.brand { font-weight: 700; font-size: 18px; letter-spacing: .5px; color: var(--text); }
nav { display: flex; gap: 4px; flex-wrap: wrap; }
nav a { padding: 6px 10px; border-radius: var(--radius); color: var(--muted); }
nav a[aria-current="page"] { background: var(--bg); color: var(--text); font-weight: 600; }
.live { margin-left: auto; display: flex; align-items: center; gap: 8px; }
main { max-width: 1280px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 20px; margin: 8px 0 16px; }
h2 { font-size: 15px; margin: 20px 0 8px; }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 2px 8px; border-radius: 999px; font-size: 12px; background: var(--line); }
.state { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; color: #fff;
  background: var(--muted); }
.state-available { background: var(--accent); } .state-running { background: var(--info); }
.state-completed { background: var(--ok); } .state-failed { background: var(--bad); }
.state-retryable { background: var(--warn); } .state-cancelled { background: #7a7f8c; }
.state-scheduled { background: #4b8bbe; } .paused { background: var(--warn); color: #fff; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 14px;
  margin-bottom: 16px; }
.table-wrap { overflow-x: auto; background: var(--panel); border: 1px solid var(--line);
  border-radius: var(--radius); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .3px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.args { max-width: 360px; overflow: hidden; text-overflow: ellipsis; font-family: ui-monospace, monospace;
  font-size: 12px; }
tr:last-child td { border-bottom: 0; }
button, .button { font: inherit; padding: 6px 12px; border-radius: var(--radius); border: 1px solid var(--line);
  background: var(--panel); color: var(--text); cursor: pointer; display: inline-block; }
button:hover, .button:hover { border-color: var(--accent); text-decoration: none; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
button:disabled { opacity: .5; cursor: default; }
.filters { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 12px;
  margin-bottom: 16px; }
.filters fieldset { border: 0; padding: 0; margin: 0 0 10px; display: flex; flex-wrap: wrap; gap: 6px;
  align-items: center; }
.filters legend { float: left; margin-right: 8px; color: var(--muted); }
.chip { border: 1px solid var(--line); border-radius: 999px; padding: 3px 10px; cursor: pointer; }
.fields { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr)); gap: 10px; }
.fields label { display: flex; flex-direction: column; gap: 4px; color: var(--muted); font-size: 12px; }
input { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg);
  color: var(--text); }
.form-actions { display: flex; gap: 8px; margin-top: 10px; align-items: center; flex-wrap: wrap; }
.toolbar { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin: 0 0 10px; }
.table-wrap + .toolbar { margin-top: 10px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 12px; margin-bottom: 16px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: 12px; }
.card .value { font-size: 22px; font-weight: 600; }
.chart svg { width: 100%; height: auto; display: block; }
.panel h2:first-child { margin-top: 0; }
.chart .completed { fill: var(--ok); } .chart .failed { fill: var(--bad); } .chart .axis { stroke: var(--line); }
.chart text { fill: var(--muted); font-size: 10px; }
.legend { display: flex; gap: 14px; font-size: 12px; color: var(--muted); }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
.legend .completed-key { background: var(--ok); } .legend .failed-key { background: var(--bad); }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 6px 14px; margin: 0; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; word-break: break-all; }
.json { font-family: ui-monospace, monospace; font-size: 12px; }
.json details { margin-left: 14px; } .json summary { cursor: pointer; margin-left: -14px; }
.json .k { color: var(--info); } .json .s { color: var(--ok); } .json .n { color: var(--accent); }
.timeline { list-style: none; padding: 0; margin: 0; border-left: 2px solid var(--line); }
.timeline li { padding: 4px 0 10px 14px; position: relative; }
.timeline li::before { content: ""; position: absolute; left: -6px; top: 8px; width: 10px; height: 10px;
  border-radius: 50%; background: var(--bad); }
.timeline li.ok::before { background: var(--ok); }
.timeline pre { white-space: pre-wrap; margin: 4px 0 0; font-size: 12px; }
#notice { padding: 10px 12px; border-radius: var(--radius); margin-bottom: 12px; background: var(--panel);
  border: 1px solid var(--line); }
#notice.error { border-color: var(--bad); color: var(--bad); }
.overlay { position: fixed; inset: 0; background: rgba(0, 0, 0, .4); display: flex; align-items: center;
  justify-content: center; z-index: 5; }
.overlay[hidden] { display: none; }
.dialog { background: var(--panel); padding: 20px; border-radius: var(--radius); max-width: 420px; width: 90%; }
@media (max-width: 640px) { main { padding: 12px; } .live { margin-left: 0; } th, td { padding: 6px; } }
`;
