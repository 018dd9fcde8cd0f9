// Package e2ek8s is the dialog engine of make e2e-k8s (scripts/e2e-k8s.sh): built with the tag
// e2ek8s, its tests run against the chart installed on a real cluster with a real node, and only
// through the chart's Services (reached through kube-proxy), never a pod's own address.
//
//   - TestTurn registers a tenant and the demo agent through the console-api Service, then sends
//     one traced turn through the connector Service and checks that the demo agent's reply streams
//     back; it records the tenant, the agent and the trace id in E2E_STATE.
//   - TestTrickle sends a steady trickle of turns (slow, streamed replies) until E2E_STOP_FILE
//     appears, and fails if a single turn did not complete: the script restarts the connector
//     Deployment meanwhile, which proves the preStop sleep, the drain and the rollout settings.
//
// It refuses to run without the script's environment (the tests skip, or fail under CI).
package e2ek8s
