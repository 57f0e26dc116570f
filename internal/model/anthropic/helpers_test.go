package anthropic

// Adapters that let the placement tests build blocks without naming the
// body's types.

type paramsForTest struct{ MessageNewParams request }

func textBlock(s string) content { return content{kind: kindText, text: s} }

func resultBlock(id string) content { return content{kind: kindToolResult, id: id} }

func marked(b block) bool { return b.param.cache }
