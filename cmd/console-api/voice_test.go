package main

import (
	"net/http"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/voiceagent"
)

// The real program hands A2AC_VOICE_EXTENSION to the agent resource, the test turns' router and
// "check my agent" alike: under another URI an agent declaring that URI has the extension (a
// no-input test turn reaches it, the check sends it a voice turn), and one declaring the
// default URI does not.
func TestVoiceExtensionSettingReachesTheConsole(t *testing.T) {
	t.Parallel()
	const uri = "urn:example:voice:v2"
	s := startConsoleWith(t, map[string]string{"A2AC_VOICE_EXTENSION": uri})
	register := func(cardURL string) map[string]any {
		return s.call(t, "POST", "/v1/agents", s.token, map[string]string{"cardUrl": cardURL}, http.StatusCreated)
	}
	ours := voiceagent.New(t, voiceagent.Options{URI: uri})
	other := voiceagent.New(t, voiceagent.Options{})
	a, b := register(ours.CardURL), register(other.CardURL)
	if a["voiceExtension"] != true || b["voiceExtension"] != false {
		t.Fatalf("voiceExtension = %v under %s, %v under the default URI; want true, false", a["voiceExtension"], uri, b["voiceExtension"])
	}
	silence := map[string]any{"noInput": map[string]any{"silenceMs": 3000}}
	if got := s.call(t, "POST", "/v1/agents/"+a["id"].(string)+"/test", s.token, silence, http.StatusOK); got["outcome"] != "INPUT_REQUIRED" || got["statusText"] != voiceagent.StillThere {
		t.Errorf("no-input turn under %s = %v", uri, got)
	}
	if got := s.call(t, "POST", "/v1/agents/"+b["id"].(string)+"/test", s.token, silence, http.StatusConflict); got["code"] != "no_input_unsupported" {
		t.Errorf("no-input turn to an agent of the default URI = %v", got)
	}
	rep := s.call(t, "POST", "/v1/agents/"+a["id"].(string)+"/check", s.token, nil, http.StatusOK)
	checks, _ := rep["checks"].([]any)
	if len(checks) == 0 || checks[len(checks)-1].(map[string]any)["check"] != "voice_extension" || checks[len(checks)-1].(map[string]any)["status"] != "pass" {
		t.Errorf("check of an agent declaring %s = %v, want a passing voice_extension last", uri, rep)
	}
	if got := ours.Received(); got[len(got)-1].Input["kind"] != "speech" {
		t.Errorf("the check's voice turn reached the agent as %+v", got[len(got)-1])
	}
}
