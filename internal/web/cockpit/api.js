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

export async function get(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  const b = await r.json().catch(() => ({}));
  if (!r.ok) throw Object.assign(new Error((b.error && b.error.message) || r.statusText), { status: r.status });
  return b;
}

export async function send(method, path, body) {
  const headers = { "content-type": "application/json" };
  if (csrf) headers["x-delta-csrf"] = csrf;
  const r = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  const b = await r.json().catch(() => ({}));
  if (!r.ok) throw Object.assign(new Error((b.error && b.error.message) || r.statusText), { status: r.status });
  return b;
}

// Paths in URLs: each segment escaped, the slashes kept.
export const filePath = (p) => p.split("/").map(encodeURIComponent).join("/");
