package daemon

import (
	"context"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/mcp"
)

// runTokenContext hands a run's authToken to its MCP calls, or marks it lost
// when the run outlived the process that held it.
func runTokenContext(ctx context.Context, tok string) context.Context {
	if tok == engine.TokenLost {
		return mcp.WithLostRunToken(ctx)
	}
	return mcp.WithRunToken(ctx, tok)
}
