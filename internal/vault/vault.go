// Package vault keeps third-party credentials encrypted at rest and keeps
// their values out of everything a model can read.
//
// Values are sealed with AES-256-GCM under a key that is the SHA-256 of the
// operator's key material, with a fresh random nonce per secret and the
// secret's name as additional data (so a ciphertext cannot be moved to
// another name). Storage is behind the Store interface, which *store.Store
// implements over the daemon's SQLite database; nothing of a value exists
// there outside the ciphertext column.
//
// There is no way to read a value back through an API: Resolve is for
// egress (an MCP header, a stdio child's env), and every value it returns is
// registered with the Redactor so any reflection of it — raw,
// percent-encoded or JSON-escaped — becomes [vault:NAME] before it reaches
// the model, the transcript, a spill file, an event or telemetry.
package vault

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// Limits.
const (
	MaxValueBytes = 4096
	MinKeyLen     = 16
)

// Errors callers map to HTTP statuses.
var (
	ErrDisabled     = errors.New("vault disabled: no DELTA_VAULT_KEY_FILE or DELTA_VAULT_KEY")
	ErrExists       = errors.New("secret already exists")
	ErrNotFound     = errors.New("secret not found")
	ErrInvalidName  = errors.New("secret name must match ^[A-Z][A-Z0-9_]{0,63}$")
	ErrInvalidValue = errors.New("secret value must be 1 to 4096 bytes")
	ErrShortKey     = errors.New("vault key must be at least 16 characters")
)

var namePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ValidName reports whether name is an acceptable secret name.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Store persists sealed secrets; *store.Store is the implementation.
// PutSecret without replace fails with store.ErrExists when the name is
// taken; Secret and DeleteSecret fail with store.ErrNotFound when it is
// not. Secrets lists rows without their ciphertext.
type Store interface {
	PutSecret(ctx context.Context, sec store.Secret, replace bool) error
	Secret(ctx context.Context, name string) (store.Secret, error)
	Secrets(ctx context.Context) ([]store.Secret, error)
	DeleteSecret(ctx context.Context, name string) error
}

// fromStore turns the store's sentinels into the vault's, which the API
// maps to statuses.
func fromStore(err error) error {
	switch {
	case errors.Is(err, store.ErrExists):
		return ErrExists
	case errors.Is(err, store.ErrNotFound):
		return ErrNotFound
	}
	return err
}

// Info is what may be shown about a secret: never its value.
type Info struct {
	Name    string    `json:"name"`
	Purpose string    `json:"purpose"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// Vault seals and opens secrets.
type Vault struct {
	store    Store
	aead     cipher.AEAD
	redactor *Redactor
	now      func() time.Time
	onPut    func(name string) // notified after a create or rotate
}

// New returns a vault over store with key material key (at least 16
// characters). redactor may be nil (a private one is made); it receives
// every value stored (Create, Rotate) or resolved (Resolve, RegisterAll).
func New(store Store, key string, redactor *Redactor) (*Vault, error) {
	if len(key) < MinKeyLen {
		return nil, ErrShortKey
	}
	sum := sha256.Sum256([]byte(key))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, fmt.Errorf("vault cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("vault gcm: %w", err)
	}
	if redactor == nil {
		redactor = NewRedactor()
	}
	return &Vault{store: store, aead: aead, redactor: redactor, now: time.Now}, nil
}

// Redactor is the vault's redactor.
func (v *Vault) Redactor() *Redactor { return v.redactor }

// OnPut registers fn to be called (synchronously) with a secret's name after
// it is created or rotated, so a server waiting for a credential can
// reconnect.
func (v *Vault) OnPut(fn func(name string)) { v.onPut = fn }

func validate(name, value string) error {
	if !ValidName(name) {
		return ErrInvalidName
	}
	if len(value) == 0 || len(value) > MaxValueBytes {
		return ErrInvalidValue
	}
	return nil
}

// Create stores a new secret; an existing name is ErrExists.
func (v *Vault) Create(ctx context.Context, name, purpose, value string) error {
	return v.put(ctx, name, purpose, value, false)
}

// Rotate replaces an existing secret's value, and its purpose when one is
// given; an operator act. A name with no secret is ErrNotFound: create it
// with Create.
func (v *Vault) Rotate(ctx context.Context, name, purpose, value string) error {
	return v.put(ctx, name, purpose, value, true)
}

func (v *Vault) put(ctx context.Context, name, purpose, value string, replace bool) error {
	if err := validate(name, value); err != nil {
		return err
	}
	nonce := make([]byte, v.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("vault nonce: %w", err)
	}
	now := v.now().UTC()
	r := store.Secret{Name: name, Purpose: purpose, Nonce: nonce, Ciphertext: v.aead.Seal(nil, nonce, []byte(value), []byte(name)), Created: now, Updated: now}
	if err := v.store.PutSecret(ctx, r, replace); err != nil {
		return fmt.Errorf("store secret %s: %w", name, fromStore(err))
	}
	// Redacted from now on, not only once something resolves it: the
	// value may already sit in a workspace file a tool reads.
	v.redactor.Register(name, value)
	if v.onPut != nil {
		v.onPut(name)
	}
	return nil
}

// Delete removes a secret.
func (v *Vault) Delete(ctx context.Context, name string) error {
	if !ValidName(name) {
		return ErrInvalidName
	}
	if err := v.store.DeleteSecret(ctx, name); err != nil {
		return fmt.Errorf("delete secret %s: %w", name, fromStore(err))
	}
	return nil
}

// List returns names, purposes and timestamps, ordered by name.
func (v *Vault) List(ctx context.Context) ([]Info, error) {
	rs, err := v.store.Secrets(ctx)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	out := make([]Info, len(rs))
	for i, r := range rs {
		out[i] = Info{Name: r.Name, Purpose: r.Purpose, Created: r.Created, Updated: r.Updated}
	}
	return out, nil
}

// Resolve decrypts a secret for egress and registers its value for
// redaction. Use it only where the value leaves the process (a header, a
// child's env), never to show it.
func (v *Vault) Resolve(ctx context.Context, name string) (string, error) {
	if !ValidName(name) {
		return "", ErrInvalidName
	}
	r, err := v.store.Secret(ctx, name)
	if err != nil {
		return "", fmt.Errorf("resolve secret %s: %w", name, fromStore(err))
	}
	plain, err := v.aead.Open(nil, r.Nonce, r.Ciphertext, []byte(name))
	if err != nil {
		return "", fmt.Errorf("resolve secret %s: cannot decrypt (wrong DELTA_VAULT_KEY?)", name)
	}
	v.redactor.Register(name, string(plain))
	return string(plain), nil
}

// RegisterAll registers every stored secret's value for redaction, so a
// value reaching a tool result, a transcript or an event is replaced by
// its marker even before anything resolves it (after a restart, say). A
// secret that cannot be decrypted is skipped; the error names them.
func (v *Vault) RegisterAll(ctx context.Context) error {
	list, err := v.List(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range list {
		if _, err := v.Resolve(ctx, s.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Resolver adapts Resolve to the func(name) form that MCP configuration and
// Expand take, with ctx for the database read.
func (v *Vault) Resolver(ctx context.Context) func(string) (string, error) {
	return func(name string) (string, error) { return v.Resolve(ctx, name) }
}

// Count is the number of stored secrets (for the status block).
func (v *Vault) Count(ctx context.Context) (int, error) {
	rs, err := v.store.Secrets(ctx)
	return len(rs), err
}
