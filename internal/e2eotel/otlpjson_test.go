//go:build e2eotel

package e2eotel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// The collector's fileexporter writes one OTLP/JSON export request per line. These types read
// the parts the checks need; the collector's pdata module is not a dependency of the project.

type anyValue struct {
	StringValue *string  `json:"stringValue"`
	IntValue    *string  `json:"intValue"` // OTLP/JSON writes 64-bit integers as strings
	BoolValue   *bool    `json:"boolValue"`
	DoubleValue *float64 `json:"doubleValue"`
}

func (v anyValue) String() string {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		return *v.IntValue
	case v.BoolValue != nil:
		return strconv.FormatBool(*v.BoolValue)
	case v.DoubleValue != nil:
		return strconv.FormatFloat(*v.DoubleValue, 'g', -1, 64)
	}
	return ""
}

type keyValue struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

type attrs []keyValue

func (a attrs) get(key string) (string, bool) {
	for _, kv := range a {
		if kv.Key == key {
			return kv.Value.String(), true
		}
	}
	return "", false
}

type resource struct {
	Attributes attrs `json:"attributes"`
}

type span struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"` // 1 internal, 2 server, 3 client
	Attributes   attrs  `json:"attributes"`
	Events       []struct {
		Name       string `json:"name"`
		Attributes attrs  `json:"attributes"`
	} `json:"events"`
	Status struct {
		Code int `json:"code"`
	} `json:"status"`

	// service and res are the span's resource, filled in when reading.
	service string
	res     attrs
}

const (
	kindInternal = 1
	kindServer   = 2
	kindClient   = 3
)

type tracesLine struct {
	ResourceSpans []struct {
		Resource   resource `json:"resource"`
		ScopeSpans []struct {
			Spans []span `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type dataPoint struct {
	Attributes attrs    `json:"attributes"`
	AsInt      *string  `json:"asInt"`
	AsDouble   *float64 `json:"asDouble"`
	Count      *string  `json:"count"`
}

func (p dataPoint) value() float64 {
	switch {
	case p.AsInt != nil:
		f, _ := strconv.ParseFloat(*p.AsInt, 64)
		return f
	case p.AsDouble != nil:
		return *p.AsDouble
	case p.Count != nil:
		f, _ := strconv.ParseFloat(*p.Count, 64)
		return f
	}
	return 0
}

type metric struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	Sum  *struct {
		IsMonotonic bool        `json:"isMonotonic"`
		DataPoints  []dataPoint `json:"dataPoints"`
	} `json:"sum"`
	Gauge *struct {
		DataPoints []dataPoint `json:"dataPoints"`
	} `json:"gauge"`
	Histogram *struct {
		DataPoints []dataPoint `json:"dataPoints"`
	} `json:"histogram"`

	service string
}

// kind is the metric's type in the words of docs/operations.md's table.
func (m metric) kind() string {
	switch {
	case m.Histogram != nil:
		return "histogram"
	case m.Gauge != nil:
		return "gauge"
	case m.Sum != nil && m.Sum.IsMonotonic:
		return "counter"
	case m.Sum != nil:
		return "up-down counter"
	}
	return "?"
}

func (m metric) points() []dataPoint {
	switch {
	case m.Histogram != nil:
		return m.Histogram.DataPoints
	case m.Gauge != nil:
		return m.Gauge.DataPoints
	case m.Sum != nil:
		return m.Sum.DataPoints
	}
	return nil
}

type metricsLine struct {
	ResourceMetrics []struct {
		Resource     resource `json:"resource"`
		ScopeMetrics []struct {
			Metrics []metric `json:"metrics"`
		} `json:"scopeMetrics"`
	} `json:"resourceMetrics"`
}

// eachLine calls f with every non-empty line of path; a missing file has no lines.
func eachLine(path string, f func([]byte) error) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read collector output: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := f(sc.Bytes()); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan %s: %w", path, err)
	}
	return nil
}

func readSpans(path string) ([]span, error) {
	var out []span
	err := eachLine(path, func(b []byte) error {
		var l tracesLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("decode spans: %w", err)
		}
		for _, rs := range l.ResourceSpans {
			svc, _ := rs.Resource.Attributes.get("service.name")
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					sp.service, sp.res = svc, rs.Resource.Attributes
					out = append(out, sp)
				}
			}
		}
		return nil
	})
	return out, err
}

func readMetrics(path string) ([]metric, []attrs, error) {
	var out []metric
	var resources []attrs
	err := eachLine(path, func(b []byte) error {
		var l metricsLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("decode metrics: %w", err)
		}
		for _, rm := range l.ResourceMetrics {
			svc, _ := rm.Resource.Attributes.get("service.name")
			resources = append(resources, rm.Resource.Attributes)
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					m.service = svc
					out = append(out, m)
				}
			}
		}
		return nil
	})
	return out, resources, err
}
