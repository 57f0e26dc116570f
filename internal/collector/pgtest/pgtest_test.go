package pgtest

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDurableCommitsAsProductionDoes: Start's cluster skips fsync,
// synchronous commit and full-page writes; StartDurable's does all three.
func TestDurableCommitsAsProductionDoes(t *testing.T) {
	for _, tc := range []struct {
		start func() (*Cluster, error)
		want  string
	}{{Start, "off"}, {StartDurable, "on"}} {
		c, err := tc.start()
		if errors.Is(err, ErrNoPostgres) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		f, s, p := settings(t, c)
		c.Stop()
		if f != tc.want || s != tc.want || p != tc.want {
			t.Errorf("fsync=%s synchronous_commit=%s full_page_writes=%s, want all %s", f, s, p, tc.want)
		}
	}
}

func settings(t *testing.T, c *Cluster) (fsync, commit, pages string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if err := conn.QueryRow(t.Context(), "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')").Scan(&fsync, &commit, &pages); err != nil {
		t.Fatal(err)
	}
	return fsync, commit, pages
}
