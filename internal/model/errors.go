package model

import "errors"

// ErrContextOverflow marks a call the endpoint refused because the prompt
// does not fit the model's context window. Wire clients wrap it inside a
// *Error (as Err), so errors.Is finds it while the status stays readable;
// the engine answers it with one forced compaction rather than a retry.
var ErrContextOverflow = errors.New("context window exceeded")
