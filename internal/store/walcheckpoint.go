package store

import (
	"context"
	"sync/atomic"
	"time"
)

// WAL checkpoints off the writer.
//
// In WAL mode a commit appends the pages it changed to the WAL, and a
// checkpoint copies them back into the database file, syncing the WAL
// before and the file after. SQLite's automatic checkpoint runs in the
// connection that committed, right after its commit: here that is the one
// writer, so while it copies a thousand pages and waits for two fsyncs,
// every step waiting to commit waits with it (with 256 runs in flight the
// writer spent about half of its commit time there, with stalls of a
// quarter of a second). The checkpointer copies them from a reader
// connection instead, shortly after each commit, while the writer goes
// on: a passive checkpoint takes no lock a writer needs and never waits
// for one.
//
// The writer keeps its automatic checkpoint, at a higher threshold
// (writerCheckpointPages), as the bound on the WAL's size: only a
// checkpoint with no commit between its last copy and the next write lets
// that write start the WAL over from its beginning, and under steady load
// only the writer's own has that. By the time it runs the checkpointer has
// copied all but the last moments' frames. A checkpoint changes where
// committed pages live, never what is committed: durability and recovery
// after a crash are SQLite's either way.

// writerCheckpointPages is the WAL size, in pages, at which the writer
// checkpoints after a commit (SQLite's default is 1,000).
const writerCheckpointPages = 4000

// checkpointGap is the least time between two checkpoints of the
// checkpointer: commits within it share the next one.
const checkpointGap = 100 * time.Millisecond

type checkpointer struct {
	wake   chan struct{} // one slot: a commit since the last checkpoint began
	cancel context.CancelFunc
	done   chan struct{}
	runs   atomic.Int64 // checkpoints attempted
}

// startCheckpointer starts the checkpointer of a SQLite file database.
func (s *Store) startCheckpointer() {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	s.ckpt = c
	go s.checkpointLoop(ctx, c)
}

// stopCheckpointer stops the checkpointer, if any, and waits for it.
func (s *Store) stopCheckpointer() {
	if c := s.ckpt; c != nil {
		c.cancel()
		<-c.done
	}
}

// committed tells the checkpointer that the writer committed.
func (s *Store) committed() {
	if c := s.ckpt; c != nil {
		select {
		case c.wake <- struct{}{}:
		default: // already due
		}
	}
}

func (s *Store) checkpointLoop(ctx context.Context, c *checkpointer) {
	defer close(c.done)
	gap := time.NewTimer(0)
	defer gap.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		// A failed or partial checkpoint (a reader still on old frames,
		// the writer's own checkpoint running) costs nothing: the frames
		// stay in the WAL for the next one.
		var busy, log, copied int
		_ = s.r.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied)
		c.runs.Add(1)
		gap.Reset(checkpointGap)
		select {
		case <-ctx.Done():
			return
		case <-gap.C:
		}
	}
}
