/// The console's stylesheet and its one script, served from the binary.
enum ConsoleAssets {
    static let css = """
        :root { --ink: #1d2330; --muted: #5b6475; --line: #d7dbe3; --bg: #f6f7f9; --card: #fff; --accent: #1f5fbf;
          --on: #1b7f3b; --off: #6b7280; --warn: #a15c00; --bad: #b3261e; font-family: system-ui, sans-serif; color: var(--ink); }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--bg); line-height: 1.45; }
        a { color: var(--accent); }
        :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .skip { position: absolute; left: -999px; } .skip:focus { left: 8px; top: 8px; background: #fff; padding: 6px; z-index: 2; }
        .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
        .top { display: flex; flex-wrap: wrap; gap: 12px 24px; align-items: center; padding: 10px 20px; background: #16233b; color: #fff; }
        .top .brand { font-weight: 700; letter-spacing: .02em; }
        .top nav { display: flex; gap: 16px; flex-wrap: wrap; }
        .top nav a { color: #dbe6ff; text-decoration: none; padding: 4px 2px; }
        .top nav a[aria-current] { color: #fff; border-bottom: 2px solid #fff; }
        .top form { margin-left: auto; } .top .link { background: none; border: 0; color: #dbe6ff; text-decoration: underline; padding: 0; }
        main { max-width: 1100px; margin: 0 auto; padding: 16px 20px 48px; }
        h1 { font-size: 1.6rem; margin: 8px 0 16px; } h2 { font-size: 1.15rem; margin: 0 0 6px; }
        .notice, .problem { padding: 10px 14px; border-radius: 6px; } .notice { background: #e6f4ea; } .problem { background: #fdecea; color: var(--bad); }
        .cards { list-style: none; padding: 0; display: grid; gap: 14px; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-bottom: 14px; }
        .cards .card { margin: 0; } .narrow { max-width: 420px; }
        .meta, .help, .runs-line, .piece { color: var(--muted); font-size: .9rem; }
        .chain { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; font-family: ui-monospace, monospace; font-size: .9rem; }
        .chain span:not([aria-hidden]):not(.sr) { background: #eef2f8; padding: 2px 6px; border-radius: 4px; }
        .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: .85rem; color: #fff; }
        .badge.on { background: var(--on); } .badge.off { background: var(--off); } .badge.warn { background: var(--warn); }
        .reason { color: var(--warn); }
        .outcome.succeeded { color: var(--on); } .outcome.failed { color: var(--bad); } .outcome.running { color: var(--warn); }
        .actions { display: flex; flex-wrap: wrap; gap: 8px; }
        .inline { display: inline; }
        button, .button { font: inherit; padding: 6px 12px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent);
          color: #fff; cursor: pointer; text-decoration: none; display: inline-block; min-height: 36px; }
        .button { background: #fff; color: var(--accent); } button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
        label { display: block; font-weight: 600; margin: 10px 0 4px; } label.check { font-weight: 400; }
        input[type=text], input[type=number], input[type=password], input[type=search], select, textarea, input:not([type]) {
          font: inherit; width: 100%; max-width: 560px; padding: 6px 8px; border: 1px solid #9aa3b2; border-radius: 6px; background: #fff; }
        textarea { font-family: ui-monospace, monospace; font-size: .9rem; }
        [aria-invalid=true] { border-color: var(--bad); }
        .field-error { color: var(--bad); margin: 4px 0; } .required { color: var(--muted); font-weight: 400; }
        fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 12px 0; } legend { font-weight: 600; padding: 0 6px; }
        .search { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin-bottom: 14px; }
        .search label { margin: 0; width: 100%; } .search input, .search select { max-width: 320px; }
        .tag { background: #eef2f8; border-radius: 4px; padding: 1px 6px; font-size: .8rem; font-weight: 400; }
        .port { font-family: ui-monospace, monospace; font-size: .85rem; } .port.source::before { content: "⇢ "; } .port.sink::before { content: "⇠ "; }
        .table-wrap { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); margin-bottom: 18px; }
        th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        td[data-counter] { font-variant-numeric: tabular-nums; text-align: right; }
        pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-size: .85rem; max-height: 12em; overflow: auto; }
        pre.error { color: var(--bad); } pre.envelope { max-height: none; background: var(--card); padding: 10px; border: 1px solid var(--line); }
        .pages { display: flex; gap: 16px; } .live-state { color: var(--muted); font-size: .9rem; min-height: 1.2em; }
        .facts dt { font-weight: 600; } .facts dd { margin: 0 0 6px; }
        .flash { animation: flash 1.2s ease-out; } @keyframes flash { from { background: #fff6c2; } to { background: transparent; } }
        @media (max-width: 640px) {
          main { padding: 12px; } .cards { grid-template-columns: 1fr; }
          table, thead, tbody, tr, th, td { display: block; } thead { position: absolute; left: -9999px; }
          tr { border-bottom: 2px solid var(--line); padding: 6px 0; } td, tbody th { border: 0; padding: 3px 8px; }
          td[data-label]::before, tbody th[data-label]::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
          td[data-counter] { text-align: left; }
        }
        """

    /// Asks before a form with `data-confirm` deletes something, and keeps the live views
    /// (`data-live` on the body) current from server-sent events. Without it every page still
    /// works; only the live updates stop.
    static let javaScript = """
        "use strict";
        document.addEventListener("submit", (event) => {
          const message = event.target.getAttribute("data-confirm");
          if (message && !window.confirm(message)) event.preventDefault();
        });
        document.addEventListener("DOMContentLoaded", () => {
          const kind = document.body.dataset.live;
          const source = document.body.dataset.liveSource;
          if (!kind || !source || !window.EventSource) return;
          const state = document.querySelector("[data-live-state]");
          const events = new EventSource(source);
          events.onopen = () => { if (state) state.textContent = "Live"; };
          events.onerror = () => { if (state) state.textContent = "Live updates paused; reconnecting…"; };
          if (kind === "runs") {
            events.addEventListener("run", (message) => {
              const update = JSON.parse(message.data);
              const body = document.getElementById("runs");
              if (!body) return;
              const holder = document.createElement("tbody");
              holder.innerHTML = update.html;
              const row = holder.firstElementChild;
              if (!row) return;
              const existing = body.querySelector(`tr[data-run="${CSS.escape(update.run)}"]`);
              if (existing) existing.replaceWith(row); else body.prepend(row);
              row.classList.add("flash");
              const none = document.querySelector("[data-no-runs]");
              if (none) none.remove();
            });
          }
          if (kind === "graph") {
            events.addEventListener("counters", (message) => {
              const snapshot = JSON.parse(message.data);
              for (const [name, counters] of Object.entries(snapshot.routes)) {
                const row = document.querySelector(`tr[data-route="${CSS.escape(name)}"]`);
                if (row) for (const [counter, value] of Object.entries(counters)) {
                  const cell = row.querySelector(`[data-counter="${counter}"]`);
                  if (cell && cell.textContent !== String(value)) cell.textContent = value;
                }
              }
              for (const [name, instance] of Object.entries(snapshot.instances)) {
                const row = document.querySelector(`tr[data-instance="${CSS.escape(name)}"]`);
                if (!row) continue;
                for (const counter of ["emitted", "acknowledged", "failed"]) {
                  const cell = row.querySelector(`[data-counter="${counter}"]`);
                  if (cell) cell.textContent = instance[counter];
                }
                const ready = row.querySelector("[data-ready]");
                if (ready) {
                  ready.textContent = instance.ready ? "ready" : "not ready";
                  ready.className = "badge " + (instance.ready ? "on" : "warn");
                }
              }
            });
          }
        });
        """
}
