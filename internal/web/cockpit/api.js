// The /v1/dev/* API as the Cockpit calls it. Same-origin requests carry the
// session cookie (when the daemon has an inspect token); writes add the
// CSRF value the session endpoint hands out.
let csrf = "";

export async function session() {
  const r = await fetch("/v1/dev/session", { credentials: "same-origin" });
  if (r.status === 401) { location.href = "/dev"; throw new Error("sign-in needed"); }
  const b = await r.json();
  csrf = b.csrf || "";
  return b;
}

// request answers the JSON body of a successful response. A failure is an
// Error with the API's own message and the HTTP status; a request that got
// no answer at all (the daemon stopped, the network is down) says that the
// daemon is unreachable, with status 0, rather than the browser's bare
// "Failed to fetch".
async function request(path, init) {
  let r;
  try { r = await fetch(path, { credentials: "same-origin", ...init }); }
  catch (e) { throw Object.assign(new Error(`the daemon is unreachable (${e.message})`), { status: 0 }); }
  const b = await r.json().catch(() => ({}));
  if (!r.ok) throw Object.assign(new Error((b.error && b.error.message) || `HTTP ${r.status} ${r.statusText}`.trim()), { status: r.status });
  return b;
}

export const get = (path) => request(path);

export function send(method, path, body) {
  const headers = { "content-type": "application/json" };
  if (csrf) headers["x-delta-csrf"] = csrf;
  return request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

// Paths in URLs: each segment escaped, the slashes kept.
export const filePath = (p) => p.split("/").map(encodeURIComponent).join("/");
