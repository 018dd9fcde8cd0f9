// Package e2eotel is the checker of make e2e-otel (scripts/e2e-otel.sh). Its tests carry the
// build tag e2eotel, so make test never runs them: they need the running stack and the real
// collector the script starts.
//
//   - TestEngineTurn acts as the dialog engine: it registers a tenant and the demo agent
//     through the console API, then sends one turn through the connector's gRPC API with a
//     traced client (the trace starts at the engine) and writes the trace id to E2E_STATE.
//   - TestCollectorOutput reads the collector's file output once the processes have stopped:
//     the trace, the resource attributes, the attribute and metric names of
//     docs/operations.md, and that no secret or utterance was exported.
package e2eotel
