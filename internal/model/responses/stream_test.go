package responses

import (
	"testing"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/model/wiretest"
)

const recordedStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5-2025-08-07","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Plan."}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"gAAAA"}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_A","name":"read_file","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":1,"delta":"{\"path\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":6,"item_id":"fc_1","output_index":1,"delta":"\"a.go\"}"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":7,"item_id":"fc_1","output_index":1,"arguments":"{\"path\":\"a.go\"}"}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_A","name":"read_file","arguments":"{\"path\":\"a.go\"}"}}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5-2025-08-07","usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096,"cache_write_tokens":512},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":16},"total_tokens":5040}}}

`

func TestRecordedStream(t *testing.T) {
	var reasoning string
	acc := newAccumulator(model.Stream{OnReasoning: func(d string) { reasoning += d }}, true)
	if err := acc.read(wiretest.Recorded([]byte(recordedStream))); err != nil {
		t.Fatal(err)
	}
	r := acc.response()
	if want := (model.Usage{InputTokens: 5000, OutputTokens: 40, CacheReadTokens: 4096, CacheWriteTokens: 512}); r.Usage != want {
		t.Errorf("Usage = %+v", r.Usage)
	}
	if r.Model != "gpt-5-2025-08-07" || reasoning != "Plan." || len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "call_A" || string(r.ToolCalls[0].Arguments) != `{"path":"a.go"}` {
		t.Errorf("r = %+v", r)
	}
	if want := `{"responses":{"items":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"gAAAA"}]}}`; string(r.Extra) != want {
		t.Errorf("Extra = %s", r.Extra)
	}
	plain := newAccumulator(model.Stream{}, false)
	_ = plain.read(wiretest.Recorded([]byte(recordedStream)))
	if plain.response().Extra != nil {
		t.Error("a plain lane kept reasoning items")
	}
}

func TestFailedResponse(t *testing.T) {
	body := `data: {"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}` + "\n\n"
	err := newAccumulator(model.Stream{}, false).read(wiretest.Recorded([]byte(body)))
	se, ok := err.(*model.StreamError)
	if !ok || se.Code != "context_length_exceeded" {
		t.Fatalf("err = %v", err)
	}
}

func FuzzStream(f *testing.F) {
	f.Add([]byte(recordedStream))
	f.Add([]byte("data: {\"type\":\"response.output_item.added\",\"item\":null}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.completed\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.function_call_arguments.done\",\"item_id\":\"x\"}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		acc := newAccumulator(model.Stream{OnText: func(string) {}, OnReasoning: func(string) {}}, true)
		_ = acc.read(wiretest.Recorded(b))
		_ = acc.response()
	})
}
