// Follows /v1/dev/stream. It keeps the last durable event id and, when the
// connection drops or the server cuts it with its fell-behind error frame,
// reconnects with ?since=<that id>, so every stored event arrives exactly
// once. Frames are parsed from a fetch body rather than EventSource, so
// every event name is seen (EventSource only delivers names it was told).
//
// onState(true) says the stream is connected; onState(false, down) that it
// is not, with down "" while it reconnects after a drop and a reason once a
// reconnect found no daemon (no answer, or an error status instead of the
// stream).
export function follow({ onEvent, onState, since = 0 }) {
  let last = since, stopped = false, ctl = null, wait = 250, down = "";
  const seen = new Set();
  async function once() {
    ctl = new AbortController();
    const signal = ctl.signal;
    let r;
    try { r = await fetch(`/v1/dev/stream?since=${last}`, { signal, credentials: "same-origin", headers: { accept: "text/event-stream" } }); }
    catch (e) { if (!signal.aborted) down = `no answer: ${e.message}`; throw e; }
    if (r.status === 401) { location.href = "/dev"; return; }
    if (!r.ok || !r.body) { down = `HTTP ${r.status}`; throw new Error("stream " + r.status); }
    down = ""; onState(true); wait = 250;
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, i); buf = buf.slice(i + 2);
        let name = "", data = "";
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (!data) continue; // heartbeat comment
        let ev; try { ev = JSON.parse(data); } catch { continue; }
        if (name === "error" && !ev.name) { ctl.abort(); return; } // cut for falling behind: resume from last
        if (ev.id) { if (seen.has(ev.id)) continue; seen.add(ev.id); last = Math.max(last, ev.id); }
        onEvent(ev);
      }
    }
  }
  (async () => {
    while (!stopped) {
      try { await once(); } catch (e) { /* dropped: reconnect below */ }
      onState(false, down);
      if (stopped) break;
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 5000);
    }
  })();
  // drop cuts the current connection as a network failure would; the loop
  // reconnects from the last durable id.
  return { last: () => last, drop() { if (ctl) ctl.abort(); }, stop() { stopped = true; if (ctl) ctl.abort(); } };
}
