package sse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

// readGuide returns the SSE answer of the platform guide, with the id: lines the official SDK
// adds (testdata/guide.sse).
func readGuide(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("testdata/guide.sse")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, never return an
// event larger than its limit, and split the input the same way whether it arrives whole or one
// byte at a time.
func FuzzReader(f *testing.F) {
	guide := readGuide(f)
	for _, seed := range []string{
		guide,
		"data: a\r\n\r\ndata: b\r\rdata:c\n\n",
		"\xEF\xBB\xBF: keep-alive\n\nid: 1\nevent: ping\ndata: now\n\nretry: 10\n",
		"data: {\"a\":\ndata: 1}\n\ndata: tail-without-blank-line",
		"event: error\ndata: {\"code\":-32603,\"message\":\"x\"}\n\n",
		"data\ndata:\ndata:  x\n\n:" + strings.Repeat("c", 300) + "\n",
		"data: " + strings.Repeat("x", 300) + "\n\n",
		"\r\n\r\r\n\n",
	} {
		f.Add([]byte(seed), uint16(64))
	}
	f.Fuzz(func(t *testing.T, input []byte, limit uint16) {
		max := 1 + int(limit%512)
		whole, errWhole := readAll(bytes.NewReader(input), max)
		split, errSplit := readAll(iotest.OneByteReader(bytes.NewReader(input)), max)
		for _, ev := range whole {
			if len(ev.Data) > max {
				t.Fatalf("event of %d bytes with limit %d", len(ev.Data), max)
			}
		}
		if len(whole) != len(split) {
			t.Fatalf("whole input gave %d events, byte by byte %d", len(whole), len(split))
		}
		for i := range whole {
			if whole[i].Type != split[i].Type || !bytes.Equal(whole[i].Data, split[i].Data) {
				t.Fatalf("event %d differs: %+v vs %+v", i, whole[i], split[i])
			}
		}
		switch {
		case errWhole == io.EOF && errSplit == io.EOF:
		case errors.As(errWhole, new(*TooLargeError)) && errors.As(errSplit, new(*TooLargeError)):
		default:
			t.Fatalf("ends differ or unexpected: %v vs %v", errWhole, errSplit)
		}
	})
}

// BenchmarkReader is the framing cost of a stream: the platform guide's sample stream split
// into events (no JSON decoding).
func BenchmarkReader(b *testing.B) {
	data := []byte(readGuide(b))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), 1<<20)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
