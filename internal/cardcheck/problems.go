package cardcheck

import (
	"fmt"
	"slices"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// Problem codes. They are stable machine words the console and its clients match on; the
// message beside them is for people and may change.
const (
	CodeInvalidJSON                  = "invalid_json"
	CodeInvalidType                  = "invalid_type"
	CodeRequired                     = "required"
	CodeMinItems                     = "min_items"
	CodeTooLong                      = "too_long"
	CodeInvalidURL                   = "invalid_url"
	CodeInsecureURL                  = "insecure_url"
	CodeUnsupportedMode              = "unsupported_mode"
	CodeDuplicate                    = "duplicate"
	CodeRecommended                  = "recommended"
	CodeUnsupportedSecurity          = "unsupported_security"
	CodeUndefinedScheme              = "undefined_scheme"
	CodeAPIKeyHeader                 = "api_key_header"
	CodeLegacyAuthentication         = "legacy_authentication"
	CodeUnsupportedProtocolVersion   = "unsupported_protocol_version"
	CodeUnsupportedTransport         = "unsupported_transport"
	CodeRequiredExtensionUnsupported = "required_extension_unsupported"
	CodeUnknownSkill                 = "unknown_skill"
	CodeInvalid                      = "invalid"
)

// collector gathers the problems of one validation run.
type collector struct {
	list []connector.Problem
	seen map[[2]string]bool // path+code already reported
	// badType holds the paths whose value had the wrong JSON type: rules about what is (not)
	// there do not fire below them, so one mistake is reported once.
	badType []string
}

func newCollector() *collector {
	return &collector{seen: map[[2]string]bool{}}
}

func (c *collector) add(sev connector.Severity, path, code, format string, args ...any) {
	k := [2]string{path, code}
	if c.seen[k] {
		return
	}
	c.seen[k] = true
	c.list = append(c.list, connector.Problem{
		Path:     path,
		Code:     code,
		Message:  fmt.Sprintf(format, args...),
		Severity: sev,
	})
}

func (c *collector) errorf(path, code, format string, args ...any) {
	c.add(connector.SeverityError, path, code, format, args...)
}

func (c *collector) warnf(path, code, format string, args ...any) {
	c.add(connector.SeverityWarning, path, code, format, args...)
}

// invalidType records a value of the wrong JSON type.
func (c *collector) invalidType(path, want string, got any) {
	c.badType = append(c.badType, path)
	c.errorf(path, CodeInvalidType, "%s must be %s, but it is %s.", displayPath(path), want, describeJSON(got))
}

// covered reports whether path is at or below a value that had the wrong JSON type.
func (c *collector) covered(path string) bool {
	for _, b := range c.badType {
		if path == b || b == "" {
			return true
		}
		if strings.HasPrefix(path, b) && (path[len(b)] == '.' || path[len(b)] == '[') {
			return true
		}
	}
	return false
}

// problems returns the problems, errors first, each group in the order found.
func (c *collector) problems() []connector.Problem {
	out := slices.Clone(c.list)
	slices.SortStableFunc(out, func(a, b connector.Problem) int {
		return severityRank(a.Severity) - severityRank(b.Severity)
	})
	return out
}

func severityRank(s connector.Severity) int {
	if s == connector.SeverityError {
		return 0
	}
	return 1
}

// displayPath is the path as a message shows it; the whole card has the empty path.
func displayPath(path string) string {
	if path == "" {
		return "The card"
	}
	return path
}

// quoteList renders ["a", "b"] for messages.
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
