package agent

import (
	"encoding/json"
	"net/http"
)

// card is the agent card: the sample card of the platform guide, field for field, with the
// A2A 0.2.5 securitySchemes added when an API key is configured (the short form
// `security: ["apiKey"]` is the platform's; the scheme lets generic A2A tools find the header).
// Skill names, descriptions and examples are the guide's, typos ("蓝球") included, so the card
// is recognisably the documented one.
type card struct {
	Name               string                    `json:"name"`
	Description        string                    `json:"description"`
	ProtocolVersion    string                    `json:"protocolVersion"`
	URL                string                    `json:"url"`
	Version            string                    `json:"version"`
	Capabilities       capabilities              `json:"capabilities"`
	SecuritySchemes    map[string]securityScheme `json:"securitySchemes,omitempty"`
	Security           []string                  `json:"security"`
	DefaultInputModes  []string                  `json:"defaultInputModes"`
	DefaultOutputModes []string                  `json:"defaultOutputModes"`
	Skills             []cardSkill               `json:"skills"`
}

type capabilities struct {
	Streaming  bool             `json:"streaming"`
	Extensions []agentExtension `json:"extensions"`
}

// agentExtension is an A2A AgentExtension of the card.
type agentExtension struct {
	URI         string `json:"uri"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

type securityScheme struct {
	Type        string `json:"type"`
	In          string `json:"in"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples"`
}

// Skill ids of the card.
const (
	skillRepeat = "ai-repeat"
	skillAdd    = "ai-calculate"
	skillCount  = "ai-count"
	skillFlash  = "ai-flash"
	skillCoach  = "ai-coach"
)

// card builds the card with baseURL (no trailing slash) as the public base.
func (a *Agent) card(baseURL string) card {
	c := card{
		Name:               "超级AI助理",
		Description:        "可以复读用户的话,计算两个数'相加',记录并数出用户说了几句话,进行闪光,可以教你打蓝球、踢足球。总之,无所不能",
		ProtocolVersion:    "0.2.5",
		URL:                baseURL + RPCPath,
		Version:            "1.0.0",
		Capabilities:       capabilities{Streaming: true, Extensions: []agentExtension{}},
		Security:           []string{},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []cardSkill{
			{ID: skillRepeat, Name: "AI复读", Description: "重复用户说的话", Tags: []string{"demo", "repeat"}, Examples: []string{"示例: 重复我说的话"}},
			{ID: skillAdd, Name: "AI计算", Description: "计算两个数'相加'", Tags: []string{"demo", "calculate"}, Examples: []string{"示例: 1与2相加是多少"}},
			{ID: skillCount, Name: "AI数数", Description: "记录并数出用户说了几句话", Tags: []string{"demo", "count"}, Examples: []string{"示例: 数一下我说了几句话"}},
			{ID: skillFlash, Name: "AI闪光", Description: "可以进行闪光", Tags: []string{"demo", "flash"}, Examples: []string{"示例: 进行闪光"}},
			{ID: skillCoach, Name: "AI教练", Description: "可以教你打蓝球、踢足球", Tags: []string{"demo", "coach"}, Examples: []string{"示例: 如何打好蓝球"}},
		},
	}
	if uri := a.opts.VoiceExtension; uri != "" {
		c.Capabilities.Extensions = append(c.Capabilities.Extensions, agentExtension{
			URI:         uri,
			Description: "Voice turns: reads the input kind (speech, text, DTMF, no input), the interruption and the channel; answers with how to collect the next input, replies that must not be interrupted, and hand-offs (escalate, end of conversation).",
			Required:    false, // clients without it get the same skills as plain text
		})
		c.Skills = append(c.Skills,
			cardSkill{ID: skillBalance, Name: "AI查余额", Description: "用电话按键输入6位密码后查询余额", Tags: []string{"demo", "voice", "dtmf"}, Examples: []string{"示例: 查余额", "check my balance"}},
			cardSkill{ID: skillTerms, Name: "AI条款", Description: "朗读服务条款，朗读时不可打断", Tags: []string{"demo", "voice"}, Examples: []string{"示例: 读一下服务条款", "read me the terms"}},
			cardSkill{ID: skillHandoff, Name: "AI转人工", Description: "转接人工客服，或结束对话", Tags: []string{"demo", "voice", "handoff"}, Examples: []string{"示例: 转人工", "示例: 再见", "I want to talk to a human"}},
		)
	}
	if a.opts.APIKey != "" {
		c.Security = []string{"apiKey"}
		c.SecuritySchemes = map[string]securityScheme{
			"apiKey": {Type: "apiKey", In: "header", Name: "X-API-KEY", Description: "the key configured for this agent in the console"},
		}
	}
	return c
}

// serveCard answers the well-known card paths.
func (a *Agent) serveCard(w http.ResponseWriter, r *http.Request) {
	base := a.opts.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	body, err := json.MarshalIndent(a.card(base), "", "  ")
	if err != nil {
		// Unreachable: the card is made of strings, bools and slices.
		http.Error(w, "marshal card: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(append(body, '\n'))
}
