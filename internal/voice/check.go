package voice

import (
	"fmt"
	"strings"

	"golang.org/x/text/language"
)

// The limits of a voice turn's fields, the same at every edge that takes them (the engine's
// gRPC API, the console's test turns). Each edge names the field its own way and wraps the fault
// in its own error; a fault describes the value without repeating it.
const (
	MaxDTMFDigits       = 64
	MaxSilenceMs        = 3_600_000 // an hour
	MaxChannelKindBytes = 32
	MaxLocaleBytes      = 35 // BCP 47's longest well-formed tags in practice (RFC 5646 §4.4.1)
)

// dtmfKeys are the keys of a telephone keypad, the extended A-D included.
const dtmfKeys = "0123456789*#ABCD"

// DigitsFault says what is wrong with DTMF digits that are not empty (an empty value is each
// edge's own "required"), "" when nothing is.
func DigitsFault(digits string) string {
	if len(digits) > MaxDTMFDigits {
		return fmt.Sprintf("longer than %d digits", MaxDTMFDigits)
	}
	if i := strings.IndexFunc(digits, func(r rune) bool { return !strings.ContainsRune(dtmfKeys, r) }); i >= 0 {
		return fmt.Sprintf("holds a character at byte %d that is not a DTMF key (0-9, *, #, A-D)", i)
	}
	return ""
}

// ChannelKindFault says what is wrong with a channel kind that is not empty, "" when nothing is.
func ChannelKindFault(kind string) string {
	switch {
	case len(kind) > MaxChannelKindBytes:
		return fmt.Sprintf("longer than %d bytes", MaxChannelKindBytes)
	case strings.ContainsFunc(kind, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') }):
		return `may hold only a-z, 0-9, "-" and "_"`
	}
	return ""
}

// LocaleFault says what is wrong with a locale that is not empty, "" when nothing is.
func LocaleFault(locale string) string {
	if len(locale) > MaxLocaleBytes {
		return fmt.Sprintf("longer than %d bytes", MaxLocaleBytes)
	}
	if _, err := language.Parse(locale); err != nil {
		return "not a well-formed BCP 47 language tag (such as zh-CN)"
	}
	return ""
}
