package firefox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Prompt is a JavaScript dialog open on the page: Type is "alert",
// "confirm", "prompt" or "beforeunload".
type Prompt struct {
	Type         string `json:"type"`
	Message      string `json:"message"`
	DefaultValue string `json:"defaultValue,omitempty"`
	// OpenedAt is when bobby saw the dialog open.
	OpenedAt time.Time `json:"-"`
}

// ErrNoDialog means no dialog is open on the page.
var ErrNoDialog = errors.New("no dialog is open")

// WatchDialogs subscribes to the page's dialogs: from then on Dialog
// reports the open one. The session leaves prompts open (bidi.NewSession),
// so none is answered unseen. stop removes the watcher.
func (p *Page) WatchDialogs(ctx context.Context) (stop func(), err error) {
	remove := p.conn.OnEvent(func(e bidiEvent) {
		var ev struct {
			Context string `json:"context"`
			Prompt
		}
		if json.Unmarshal(e.Params, &ev) != nil || ev.Context != p.bc {
			return
		}
		p.dmu.Lock()
		defer p.dmu.Unlock()
		switch e.Method {
		case "browsingContext.userPromptOpened":
			pr := ev.Prompt
			pr.OpenedAt = time.Now()
			p.prompt = &pr
		case "browsingContext.userPromptClosed":
			p.prompt = nil
		}
	})
	if _, err := p.conn.Subscribe(ctx, []string{"browsingContext.userPromptOpened", "browsingContext.userPromptClosed"}, p.bc); err != nil {
		remove()
		return nil, fmt.Errorf("watch dialogs: %w", err)
	}
	return remove, nil
}

// Dialog returns the open dialog, if any.
func (p *Page) Dialog() (Prompt, bool) {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	if p.prompt == nil {
		return Prompt{}, false
	}
	return *p.prompt, true
}

// HandleDialog accepts or dismisses the open dialog, typing text into a
// prompt() first when set.
func (p *Page) HandleDialog(ctx context.Context, accept bool, text string) (Prompt, error) {
	pr, ok := p.Dialog()
	if !ok {
		return Prompt{}, fmt.Errorf("handle dialog: %w", ErrNoDialog)
	}
	if err := p.conn.HandlePrompt(ctx, p.bc, accept, text); err != nil {
		return pr, fmt.Errorf("handle %s dialog: %w", pr.Type, err)
	}
	p.dmu.Lock()
	p.prompt = nil
	p.dmu.Unlock()
	return pr, nil
}

// Screenshot captures the viewport as PNG.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	b, err := p.conn.Screenshot(ctx, p.bc)
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return b, nil
}
