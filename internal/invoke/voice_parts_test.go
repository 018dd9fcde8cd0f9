//go:build unix

package invoke_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// TestNoInputPart is the evidence for the one part a no-input (silence) turn carries: every
// candidate below is sent as a complete no-input turn (activation header, <URI>/input
// {"kind":"noInput"}) to each voice peer, on every binding and generation both official SDKs
// serve, blocking and streamed. An empty text part, a data part {} and a text part " " are all
// accepted everywhere and handed to the executor exactly as sent, which answers with its
// reprompt; a message without parts is refused by a2a-go (v2.3.1 and v0.3.15: -32602 "message
// parts is required") and accepted by @a2a-js/sdk. The connector sends the empty text part:
// the one that says "nothing was said" to any agent reading text.
func TestNoInputPart(t *testing.T) {
	t.Parallel()
	c := voiceClient(t)
	peers := append(goVoicePeers(t, voiceURI), jsVoicePeers(t, voiceURI)...)
	candidates := []struct {
		name  string
		parts a2a.Parts
		seen  []sdkagent.SeenPart
	}{
		{"empty_text", a2a.Parts{{Kind: a2a.PartText, Text: ""}}, []sdkagent.SeenPart{{Kind: "text", Text: ""}}},
		{"data_object", a2a.Parts{{Kind: a2a.PartData, Data: json.RawMessage(`{}`)}}, []sdkagent.SeenPart{{Kind: "data", Data: map[string]any{}}}},
		{"space_text", a2a.Parts{{Kind: a2a.PartText, Text: " "}}, []sdkagent.SeenPart{{Kind: "text", Text: " "}}},
		{"no_parts", a2a.Parts{}, []sdkagent.SeenPart{}},
	}
	for _, p := range peers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			for _, cand := range candidates {
				for _, stream := range []bool{false, true} {
					mode := map[bool]string{false: "send", true: "stream"}[stream]
					id := strings.ReplaceAll(p.name, "/", ".") + "." + cand.name + "." + mode
					msg := voiceMessage(id, "", map[string]string{"input": `{"kind":"noInput","silenceMs":4000}`})
					msg.Parts = cand.parts
					got, err := send(t, c, activated(p.ep, voiceURI), msg, stream)
					if cand.name == "no_parts" && !p.js {
						if err == nil || !strings.Contains(err.Error(), "-32602") || !strings.Contains(err.Error(), "message parts is required") {
							t.Errorf("%s, %s: %+v, %v; want a2a-go's -32602 message parts is required", cand.name, mode, got, err)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s, %s: refused: %v", cand.name, mode, err)
						continue
					}
					if got.state != a2a.TaskStateInputRequired || got.last == nil || partsOnlyText(got.last.Parts) != sdkagent.Reprompt {
						t.Errorf("%s, %s: %+v (status message %+v), want the reprompt", cand.name, mode, got, got.last)
					}
					turn := mustTurn(t, p, id)
					if !turn.Voice.Active || turn.Voice.Input == nil || turn.Voice.Input.Kind != "noInput" || turn.Voice.Input.SilenceMs != 4000 ||
						len(turn.Parts) != len(cand.seen) || (len(cand.seen) > 0 && !reflect.DeepEqual(turn.Parts, cand.seen)) {
						t.Errorf("%s, %s: the executor was handed parts %+v, voice %+v; want parts %+v", cand.name, mode, turn.Parts, turn.Voice, cand.seen)
					}
				}
			}
		})
	}
}
