package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/deltaharness/delta/internal/vault"
)

// Secrets is the vault as the API uses it. No route ever returns a value.
type Secrets interface {
	Create(ctx context.Context, name, purpose, value string) error
	Rotate(ctx context.Context, name, purpose, value string) error
	Delete(ctx context.Context, name string) error
	List(ctx context.Context) ([]vault.Info, error)
}

type secretBody struct {
	Value   *string `json:"value"`
	Purpose string  `json:"purpose"`
}

// secretsError maps vault errors to answers; the value is never echoed.
func secretsError(err error) error {
	switch {
	case errors.Is(err, vault.ErrExists):
		return &requestError{status: http.StatusConflict, msg: "a secret with that name exists; rotate it through the inspection API"}
	case errors.Is(err, vault.ErrNotFound):
		return &requestError{status: http.StatusNotFound, msg: "no secret with that name"}
	case errors.Is(err, vault.ErrInvalidName):
		return badRequest("secret names match ^[A-Z][A-Z0-9_]{0,63}$")
	case errors.Is(err, vault.ErrInvalidValue):
		return badRequest("secret value must be 1 to 4096 bytes")
	}
	return err
}

func (s *Server) noVault(w http.ResponseWriter) bool {
	if s.o.Secrets == nil {
		writeError(w, s.o.Logger, &requestError{status: http.StatusServiceUnavailable, msg: "the vault is not enabled: set DELTA_VAULT_KEY_FILE or DELTA_VAULT_KEY"})
		return true
	}
	return false
}

func (s *Server) putSecret(w http.ResponseWriter, r *http.Request, rotate bool) {
	if s.noVault(w) {
		return
	}
	var body secretBody
	if err := decodeBody(r, &body); err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if body.Value == nil {
		writeError(w, s.o.Logger, badRequest("field value is required"))
		return
	}
	name := r.PathValue("name")
	var err error
	if rotate {
		err = s.o.Secrets.Rotate(r.Context(), name, body.Purpose, *body.Value)
	} else {
		err = s.o.Secrets.Create(r.Context(), name, body.Purpose, *body.Value)
	}
	if rotate && errors.Is(err, vault.ErrNotFound) {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "no secret with that name to rotate; create it with PUT /v1/secrets/{name}"})
		return
	}
	if err != nil {
		writeError(w, s.o.Logger, secretsError(err))
		return
	}
	status := http.StatusCreated
	if rotate {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"name": name, "purpose": body.Purpose})
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	if s.noVault(w) {
		return
	}
	list, err := s.o.Secrets.List(r.Context())
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if list == nil {
		list = []vault.Info{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": list})
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if s.noVault(w) {
		return
	}
	if err := s.o.Secrets.Delete(r.Context(), r.PathValue("name")); err != nil {
		writeError(w, s.o.Logger, secretsError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": r.PathValue("name")})
}

// inspectWrite additionally requires DELTA_INSPECT_WRITE=1: the inspection
// routes that change state (vault rotation and deletion, self-file restore).
func (s *Server) inspectWrite(h http.HandlerFunc) http.Handler {
	return s.inspect(func(w http.ResponseWriter, r *http.Request) {
		if !s.o.InspectWrite {
			writeError(w, s.o.Logger, &requestError{status: http.StatusForbidden, msg: "inspection writes are off: set DELTA_INSPECT_WRITE=1"})
			return
		}
		h(w, r)
	})
}
