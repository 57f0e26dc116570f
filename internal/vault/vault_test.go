package vault_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/vault"
)

const key = "correct horse battery staple"

// newVault opens a real store in a temporary directory and a vault over
// it. It also returns a raw connection to the same file, for tests that
// inspect or tamper with the rows the way an attacker with the file could.
func newVault(t *testing.T) (*vault.Vault, *store.Store, *sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "delta.db")
	st, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	v, err := vault.New(st, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, st, db, path
}

func TestCreateOnlyAndResolve(t *testing.T) {
	v, _, _, _ := newVault(t)
	ctx := t.Context()
	if err := v.Create(ctx, "EXA_API_KEY", "web search", "exa-value-1234"); err != nil {
		t.Fatal(err)
	}
	if err := v.Create(ctx, "EXA_API_KEY", "again", "other-value"); !errors.Is(err, vault.ErrExists) {
		t.Fatalf("second Create = %v, want ErrExists", err)
	}
	got, err := v.Resolve(ctx, "EXA_API_KEY")
	if err != nil || got != "exa-value-1234" {
		t.Fatalf("Resolve = %q, %v (a failed create must not change the value)", got, err)
	}
	if err := v.Rotate(ctx, "EXA_API_KEY", "", "exa-value-5678"); err != nil {
		t.Fatal(err)
	}
	list, err := v.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "EXA_API_KEY" || list[0].Purpose != "web search" || list[0].Updated.Before(list[0].Created) {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if got, _ := v.Resolve(ctx, "EXA_API_KEY"); got != "exa-value-5678" {
		t.Errorf("after rotate = %q", got)
	}
	if err := v.Delete(ctx, "EXA_API_KEY"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Resolve(ctx, "EXA_API_KEY"); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("Resolve after delete = %v", err)
	}
	if err := v.Rotate(ctx, "EXA_API_KY", "", "typo-value"); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("Rotate of a name with no secret = %v, want ErrNotFound", err)
	}
	if list, _ := v.List(ctx); len(list) != 0 {
		t.Errorf("a refused rotation left secrets behind: %+v", list)
	}
	if err := v.Delete(ctx, "EXA_API_KEY"); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("second delete = %v", err)
	}
}

func TestValidation(t *testing.T) {
	v, _, _, _ := newVault(t)
	cases := []struct {
		name, value string
		want        error
	}{
		{"lower", "value", vault.ErrInvalidName},
		{"1ABC", "value", vault.ErrInvalidName},
		{"A-B", "value", vault.ErrInvalidName},
		{"A" + strings.Repeat("B", 64), "value", vault.ErrInvalidName},
		{"", "value", vault.ErrInvalidName},
		{"OK_NAME", "", vault.ErrInvalidValue},
		{"OK_NAME", strings.Repeat("x", 4097), vault.ErrInvalidValue},
		{"A" + strings.Repeat("B", 63), strings.Repeat("x", 4096), nil},
		{"A", "v", nil},
	}
	for _, c := range cases {
		if err := v.Create(t.Context(), c.name, "", c.value); !errors.Is(err, c.want) {
			t.Errorf("Create(%q, %d bytes) = %v, want %v", c.name, len(c.value), err, c.want)
		}
	}
	if _, err := vault.New(nil, "short", nil); !errors.Is(err, vault.ErrShortKey) {
		t.Errorf("New with a short key = %v", err)
	}
}

func TestNothingOfTheValueOutsideCiphertext(t *testing.T) {
	v, st, db, path := newVault(t)
	const value = "PLAINTEXT-MARKER-0123456789"
	if err := v.Create(t.Context(), "KB_TOKEN", "kb bearer", value); err != nil {
		t.Fatal(err)
	}
	var nonce, ct []byte
	if err := db.QueryRow(`SELECT nonce, ciphertext FROM vault_secrets WHERE name = 'KB_TOKEN'`).Scan(&nonce, &ct); err != nil {
		t.Fatal(err)
	}
	if len(nonce) != 12 || bytes.Contains(ct, []byte(value)) || len(ct) != len(value)+16 {
		t.Errorf("nonce %d bytes, ciphertext %d bytes", len(nonce), len(ct))
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(value)) || bytes.Contains(b, []byte("MARKER")) {
			t.Errorf("%s holds the plaintext", f)
		}
	}
	// A different key cannot open it, and says why.
	other, _ := vault.New(st, "another key of sixteen+", nil)
	if _, err := other.Resolve(t.Context(), "KB_TOKEN"); err == nil || !strings.Contains(err.Error(), "cannot decrypt") || strings.Contains(err.Error(), value) {
		t.Errorf("Resolve with the wrong key = %v", err)
	}
	// Moving a ciphertext to another name does not decrypt (name is bound).
	if _, err := db.Exec(`INSERT INTO vault_secrets SELECT 'STOLEN', purpose, nonce, ciphertext, created_at, updated_at FROM vault_secrets WHERE name='KB_TOKEN'`); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Resolve(t.Context(), "STOLEN"); err == nil {
		t.Errorf("a ciphertext moved to another name decrypted")
	}
}

func TestRedactAllEncodings(t *testing.T) {
	v, _, _, _ := newVault(t)
	const value = `tok/en+1&2="x"<y>`
	if err := v.Create(t.Context(), "KB_TOKEN", "", value); err != nil {
		t.Fatal(err)
	}
	// Stored is enough: the value may be in a file a tool reads before
	// anything resolves it.
	r := v.Redactor()
	jsonForm, _ := json.Marshal(map[string]string{"auth": value})
	cases := map[string]string{
		"raw":          "Authorization: Bearer " + value,
		"query":        "https://x.test/?k=" + url.QueryEscape(value),
		"path":         "https://x.test/" + url.PathEscape(value),
		"json":         string(jsonForm),
		"json no html": `{"auth":"tok/en+1&2=\"x\"<y>"}`,
	}
	for name, s := range cases {
		got := r.Redact(s)
		if !strings.Contains(got, "[vault:KB_TOKEN]") || strings.Contains(got, "tok/en") || strings.Contains(got, "tok%2Fen") {
			t.Errorf("%s: Redact(%q) = %q", name, s, got)
		}
	}
	if got := r.Redact("nothing secret here"); got != "nothing secret here" {
		t.Errorf("clean text changed: %q", got)
	}
}

// TestRegisterAllAfterRestart: a vault opened over a store that already
// holds secrets redacts their values once RegisterAll ran, before any
// Resolve.
func TestRegisterAllAfterRestart(t *testing.T) {
	v, st, _, _ := newVault(t)
	if err := v.Create(t.Context(), "KB_TOKEN", "", "kb-value-0042"); err != nil {
		t.Fatal(err)
	}
	again, err := vault.New(st, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Redactor().Redact("token kb-value-0042"); got != "token kb-value-0042" {
		t.Fatalf("a fresh redactor already knew the value: %q", got)
	}
	if err := again.RegisterAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := again.Redactor().Redact("token kb-value-0042"); got != "token [vault:KB_TOKEN]" {
		t.Errorf("after RegisterAll, Redact = %q, want the marker", got)
	}
}

func TestRedactorShortAndOverlapping(t *testing.T) {
	r := vault.NewRedactor()
	r.Register("TINY", "abc") // too short to register
	r.Register("OUTER", "secret-value-long")
	r.Register("INNER", "secret-value")
	if got := r.Redact("abc secret-value-long secret-value"); got != "abc [vault:OUTER] [vault:INNER]" {
		t.Errorf("Redact = %q", got)
	}
}

func TestExpand(t *testing.T) {
	resolve := func(name string) (string, error) {
		if name == "KB_TOKEN" {
			return "v1", nil
		}
		return "", vault.ErrNotFound
	}
	cases := []struct {
		in, want string
		err      error
	}{
		{"Bearer {{vault:KB_TOKEN}}", "Bearer v1", nil},
		{"{{ vault:KB_TOKEN }}-{{vault:KB_TOKEN}}", "v1-v1", nil},
		{"plain", "plain", nil},
		{"{{vault:MISSING}}", "", vault.ErrNotFound},
		{"{{vault:lower}}", "", nil},
	}
	for _, c := range cases {
		got, err := vault.Expand(c.in, resolve)
		if c.in == "{{vault:lower}}" {
			if err == nil {
				t.Errorf("invalid name accepted")
			}
			continue
		}
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("Expand(%q) = %q, %v", c.in, got, err)
		}
	}
	if _, err := vault.Expand("{{vault:KB_TOKEN}}", nil); !errors.Is(err, vault.ErrDisabled) {
		t.Errorf("no vault: %v", err)
	}
	if refs := vault.References("a {{vault:A}} b {{vault:B_2}}"); strings.Join(refs, ",") != "A,B_2" {
		t.Errorf("References = %v", refs)
	}
}

func TestOnPut(t *testing.T) {
	v, _, _, _ := newVault(t)
	var got []string
	v.OnPut(func(name string) { got = append(got, name) })
	_ = v.Create(context.Background(), "A_B", "", "value-1")
	_ = v.Create(context.Background(), "A_B", "", "value-2") // refused: no notification
	_ = v.Rotate(context.Background(), "A_B", "", "value-3")
	if strings.Join(got, ",") != "A_B,A_B" {
		t.Errorf("OnPut calls = %v", got)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"{{vault:A}}", "{{vault:}}", "{{ vault:A_1 }}x{{", "}}{{vault:A", "{{vault:a b}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := vault.Expand(s, func(string) (string, error) { return "V", nil })
		if err == nil && strings.Contains(out, "{{vault:") && vault.References(out) != nil {
			t.Errorf("unexpanded reference in %q", out)
		}
	})
}

func FuzzRedact(f *testing.F) {
	f.Add("secret-value", "xx secret-value yy")
	f.Add(`a"b<c>`, `{"k":"a\"b\u003cc\u003e"}`)
	f.Fuzz(func(t *testing.T, value, text string) {
		r := vault.NewRedactor()
		r.Register("N", value)
		got := r.Redact(text + value)
		if len(value) >= vault.MinRedactLen && strings.Contains(got, value) && !strings.Contains("[vault:N]", value) {
			t.Errorf("value %q survives in %q", value, got)
		}
	})
}

// BenchmarkRedact: a 20 KB tool result (the default result cap) against 20
// registered secrets.
func BenchmarkRedact(b *testing.B) {
	r := vault.NewRedactor()
	for i := range 20 {
		r.Register("SECRET_"+string(rune('A'+i)), strings.Repeat(string(rune('a'+i)), 8)+"-value/+&\"")
	}
	text := strings.Repeat("ordinary tool output without credentials, ", 500)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = r.Redact(text)
	}
}
