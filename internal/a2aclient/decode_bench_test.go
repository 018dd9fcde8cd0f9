package a2aclient

import (
	"testing"
)

// BenchmarkDecodeStreamEvent is the per-chunk decoding cost of a stream: one SSE event's data,
// JSON-RPC envelope and A2A result, as the connector sees the events of a typical turn.
func BenchmarkDecodeStreamEvent(b *testing.B) {
	events := map[string]struct {
		d    dialect
		data string
	}{
		"v0/artifact-update": {v0Dialect{}, `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"artifact-update","taskId":"3f1c2a4e-6b1d-4c59-9b7e-2f9d1e0a7c11","contextId":"8a7e6d5c-4b3a-4921-8f0e-1d2c3b4a5f6e","artifact":{"artifactId":"a-1","parts":[{"kind":"text","text":"今天北京晴，气温二十三度，适合出门散步。"}]},"append":true,"lastChunk":false}}`},
		"v0/status-update":   {v0Dialect{}, `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"status-update","taskId":"3f1c2a4e-6b1d-4c59-9b7e-2f9d1e0a7c11","contextId":"8a7e6d5c-4b3a-4921-8f0e-1d2c3b4a5f6e","status":{"state":"completed","timestamp":"2026-11-24T01:02:03.456Z"},"final":true}}`},
		"v1/artifact-update": {v1Dialect{}, `{"jsonrpc":"2.0","id":"req-1","result":{"artifactUpdate":{"taskId":"3f1c2a4e-6b1d-4c59-9b7e-2f9d1e0a7c11","contextId":"8a7e6d5c-4b3a-4921-8f0e-1d2c3b4a5f6e","artifact":{"artifactId":"a-1","parts":[{"text":"今天北京晴，气温二十三度，适合出门散步。"}]},"append":true}}}`},
	}
	for name, e := range events {
		b.Run(name, func(b *testing.B) {
			cl := call{d: e.d, op: OpStreamMessage, method: e.d.method(OpStreamMessage), id: "req-1"}
			data := []byte(e.data)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
