package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"acemq-interop/peers/go/acemq"
)

// maxErrorSamples bounds the failure texts a load answer carries.
const maxErrorSamples = 5

// loadClient sends one request of a load and waits for its end.
type loadClient func(body []byte) error

func (p *peer) load(cmd command) (answer, error) {
	if cmd.RoutingKey == nil {
		return nil, bad("missing field 'routing_key'")
	}
	if cmd.Requests == nil || *cmd.Requests < 0 {
		return nil, bad("requests must be given, at least 0")
	}
	if cmd.InFlight == nil || *cmd.InFlight < 1 {
		return nil, bad("in_flight must be given, at least 1")
	}
	warmup, bodyBytes := 0, 0
	if cmd.Warmup != nil {
		warmup = *cmd.Warmup
	}
	if cmd.BodyBytes != nil {
		bodyBytes = *cmd.BodyBytes
	}
	timeout, err := timeoutOf(cmd)
	if err != nil {
		return nil, err
	}
	conn, err := p.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	var send loadClient
	switch cmd.Client {
	case "binding":
		pol, err := requesterPolicy(cmd.Policy)
		if err != nil {
			return nil, err
		}
		r, err := newRequester(conn, pol, acemq.RequesterOptions{})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		var opts []acemq.RequestOption
		if cmd.TimeoutMS != nil {
			opts = append(opts, acemq.WithTimeout(timeout))
		}
		send = func(body []byte) error {
			var reply json.RawMessage
			return r.Request(context.Background(), cmd.Exchange, *cmd.RoutingKey, json.RawMessage(body), &reply, opts...)
		}
	case "raw":
		r, err := openRawRequester(conn)
		if err != nil {
			return nil, err
		}
		defer r.close()
		if cmd.TimeoutMS == nil {
			timeout = acemq.DefaultTimeout
		}
		send = func(body []byte) error { return r.request(cmd.Exchange, *cmd.RoutingKey, body, timeout) }
	default:
		return nil, bad("unknown client %q: binding or raw", cmd.Client)
	}

	body := padBody(bodyBytes)
	runLoad(send, body, warmup, *cmd.InFlight, nil)
	res := &loadResult{latencies: make([]int64, 0, *cmd.Requests)}
	started := time.Now()
	runLoad(send, body, *cmd.Requests, *cmd.InFlight, res)
	wall := time.Since(started)

	return answer{"load": res.summary(cmd.Client, *cmd.Requests, *cmd.InFlight, bodyBytes, wall)}, nil
}

// padBody is a JSON body of about n bytes: {"pad": "xxx..."}.
func padBody(n int) []byte {
	pad := n - len(`{"pad":""}`)
	if pad < 0 {
		pad = 0
	}
	return []byte(`{"pad":"` + strings.Repeat("x", pad) + `"}`)
}

// loadResult collects the measured requests; workers add under one lock,
// once per request, which costs far less than a request.
type loadResult struct {
	mu        sync.Mutex
	latencies []int64 // microseconds, of the completed requests
	timeouts  int
	errors    int
	samples   []string
}

func (l *loadResult) add(latency time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.latencies = append(l.latencies, latency.Microseconds())
	case errors.Is(err, acemq.ErrTimedOut) || errors.Is(err, errRawTimeout):
		l.timeouts++
	default:
		l.errors++
		if len(l.samples) < maxErrorSamples {
			l.samples = append(l.samples, err.Error())
		}
	}
}

// runLoad sends n requests from inFlight workers; res, when not nil, records
// each one's latency from just before the send to its end.
func runLoad(send loadClient, body []byte, n, inFlight int, res *loadResult) {
	var next int64
	var wg sync.WaitGroup
	for w := 0; w < inFlight && w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for atomic.AddInt64(&next, 1) <= int64(n) {
				started := time.Now()
				err := send(body)
				if res != nil {
					res.add(time.Since(started), err)
				}
			}
		}()
	}
	wg.Wait()
}

func (l *loadResult) summary(client string, requests, inFlight, bodyBytes int, wall time.Duration) map[string]interface{} {
	sorted := l.latencies
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	latency := map[string]interface{}{"min": 0, "mean": 0, "p50": 0, "p90": 0, "p99": 0, "max": 0}
	if n := len(sorted); n > 0 {
		var sum int64
		for _, v := range sorted {
			sum += v
		}
		latency = map[string]interface{}{
			"min": sorted[0], "mean": math.Round(float64(sum) / float64(n)),
			"p50": nearestRank(sorted, 50), "p90": nearestRank(sorted, 90), "p99": nearestRank(sorted, 99),
			"max": sorted[n-1],
		}
	}
	durationMS := float64(wall.Microseconds()) / 1000
	rate := 0.0
	if wall > 0 {
		rate = math.Round(float64(len(sorted))/wall.Seconds()*10) / 10
	}
	samples := l.samples
	if samples == nil {
		samples = []string{}
	}
	return map[string]interface{}{
		"client": client, "requests": requests, "completed": len(sorted),
		"errors": l.errors, "timeouts": l.timeouts, "in_flight": inFlight, "body_bytes": bodyBytes,
		"duration_ms": math.Round(durationMS*10) / 10, "rate_per_s": rate,
		"latency_us": latency, "error_samples": samples,
	}
}

// nearestRank is the p-th percentile of sorted values by the nearest-rank
// method: the value at rank ceil(p/100 * n), counting from 1.
func nearestRank(sorted []int64, p float64) int64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
