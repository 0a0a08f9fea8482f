// wsload: a closed-loop WebSocket echo load generator for the benchmark suite.
//
// It opens -c connections to -url (at most -dial-concurrency handshakes in flight, each
// bounded by -connect-timeout, all of them by -ramp-timeout), and fails at once, with the
// reason, if any connection cannot be established. Then every connection runs the same
// loop for -d: send a -size byte text message, wait for its echo, check it, repeat.
// Round trips that complete inside the window are counted and their latency recorded
// in a log-linear histogram. Last, each connection is closed with a close frame.
//
// With -deflate it speaks permessage-deflate instead (deflate.go, on gobwas/ws): JSON
// documents of about -size bytes, compressed once up front, every echo inflated and
// compared with what was sent.
//
// It prints one JSON object on stdout; the exit status is 1 when the connections could
// not be established (the JSON then has "error"), 2 for bad arguments.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// client is one connection's side of the echo: the loop, then the closing handshake.
type client interface {
	loop(id int, cfg config, end time.Time, hist *histogram, roundTrips *atomic.Uint64, fails *failures)
	close(grace time.Duration)
}

// gorillaClient is the plain echo (32-byte text messages, no extension).
type gorillaClient struct{ c *websocket.Conn }

func (g gorillaClient) loop(id int, cfg config, end time.Time, hist *histogram, roundTrips *atomic.Uint64, fails *failures) {
	echoLoop(g.c, id, cfg, end, hist, roundTrips, fails)
}

func (g gorillaClient) close(grace time.Duration) { closeConn(g.c, grace) }

// dialFunc opens one connection; it also returns the handshake's Sec-WebSocket-Extensions.
type dialFunc func(ctx context.Context) (client, string, error)

func gorillaDialer(cfg config) dialFunc {
	dialer := websocket.Dialer{
		NetDialContext:   (&net.Dialer{Timeout: cfg.connectTimeout}).DialContext,
		HandshakeTimeout: cfg.connectTimeout,
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
	}
	return func(ctx context.Context) (client, string, error) {
		conn, resp, err := dialer.DialContext(ctx, cfg.url, nil)
		if err != nil {
			if resp != nil {
				err = fmt.Errorf("%w (HTTP %s)", err, resp.Status)
			}
			return nil, "", err
		}
		return gorillaClient{conn}, resp.Header.Get("Sec-WebSocket-Extensions"), nil
	}
}

type config struct {
	url            string
	connections    int
	duration       time.Duration
	size           int
	connectTimeout time.Duration
	rampTimeout    time.Duration
	dialParallel   int
	timeout        time.Duration
	closeGrace     time.Duration
	serverPgid     int
	deflate        bool
}

type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

type report struct {
	URL             string            `json:"url"`
	Connections     int               `json:"connections"`
	Connected       int64             `json:"connected"`
	ConnectErrors   int64             `json:"connect_errors"`
	ConnectSeconds  float64           `json:"connect_s"`
	MessageBytes    int               `json:"message_bytes"`
	DurationSeconds float64           `json:"duration_s"`
	RoundTrips      uint64            `json:"round_trips"`
	RoundTripsPerS  float64           `json:"round_trips_per_s"`
	Errors          int64             `json:"errors"`
	ErrorKinds      map[string]int64  `json:"error_kinds"`
	FirstError      string            `json:"first_error,omitempty"`
	LatencyMs       *latency          `json:"latency_ms,omitempty"`
	Unfinished      int64             `json:"unfinished"`
	ServerCPU       float64           `json:"server_cpu_s,omitempty"`
	LoadgenCPU      float64           `json:"loadgen_cpu_s"`
	Error           string            `json:"error,omitempty"`
	Library         string            `json:"library"`
	Deflate         bool              `json:"deflate"`
	Extensions      string            `json:"extensions,omitempty"`
	CompressedEchos uint64            `json:"compressed_echoes"`
	Limits          map[string]uint64 `json:"limits"`
}

// failures counts errors by kind and keeps the first one's text.
type failures struct {
	mu    sync.Mutex
	kinds map[string]int64
	first string
	total atomic.Int64
}

func (f *failures) add(kind string, err error) {
	f.total.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kinds[kind]++
	if f.first == "" {
		f.first = fmt.Sprintf("%s: %v", kind, err)
	}
}

func main() {
	var cfg config
	showVersion := flag.Bool("version", false, "print the WebSocket library version and exit")
	flag.StringVar(&cfg.url, "url", "", "ws:// URL of the echo endpoint")
	flag.IntVar(&cfg.connections, "c", 100, "connections (clients), each a closed loop")
	flag.DurationVar(&cfg.duration, "d", 5*time.Second, "measured duration, after all connections are up")
	flag.IntVar(&cfg.size, "size", 32, "message size in bytes (text)")
	flag.DurationVar(&cfg.connectTimeout, "connect-timeout", 5*time.Second, "TCP connect + handshake timeout, per connection")
	flag.DurationVar(&cfg.rampTimeout, "ramp-timeout", 60*time.Second, "time allowed to establish all connections")
	flag.IntVar(&cfg.dialParallel, "dial-concurrency", 64, "handshakes in flight at once while ramping up")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "per round trip: no echo within this is an error")
	flag.DurationVar(&cfg.closeGrace, "close-grace", 2*time.Second, "time allowed for the closing handshake")
	flag.IntVar(&cfg.serverPgid, "server-pgid", 0, "if set, report this process group's CPU time over the window")
	flag.BoolVar(&cfg.deflate, "deflate", false, "offer permessage-deflate, require it, and send JSON of about -size bytes")
	flag.Parse()
	if *showVersion {
		fmt.Println(library())
		return
	}
	if cfg.url == "" || cfg.connections < 1 || cfg.size < 1 || cfg.duration <= 0 || cfg.dialParallel < 1 {
		fmt.Fprintln(os.Stderr, "wsload: need -url, and -c, -size, -d, -dial-concurrency > 0")
		flag.Usage()
		os.Exit(2)
	}
	rep := run(cfg)
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	if rep.Error != "" {
		os.Exit(1)
	}
}

func library() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/gorilla/websocket" {
				return dep.Path + " " + dep.Version
			}
		}
	}
	return "github.com/gorilla/websocket (unknown version)"
}

// raiseFileLimit lifts the soft descriptor limit to what the connections need (up to
// the hard limit) and says clearly when the hard limit is too low.
func raiseFileLimit(need uint64) (map[string]uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil, fmt.Errorf("getrlimit: %w", err)
	}
	if lim.Cur < need {
		lim.Cur = min(lim.Max, max(need, lim.Cur))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return nil, fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", lim.Cur, err)
		}
	}
	limits := map[string]uint64{"nofile_soft": lim.Cur, "nofile_hard": lim.Max}
	if lim.Cur < need {
		return limits, fmt.Errorf("RLIMIT_NOFILE hard limit %d is below the %d descriptors needed (raise `ulimit -Hn`)", lim.Max, need)
	}
	return limits, nil
}

func run(cfg config) *report {
	rep := &report{
		URL:          cfg.url,
		Connections:  cfg.connections,
		MessageBytes: cfg.size,
		ErrorKinds:   map[string]int64{},
		Library:      library(),
		Deflate:      cfg.deflate,
	}
	limits, err := raiseFileLimit(uint64(cfg.connections) + 64)
	rep.Limits = limits
	if err != nil {
		rep.Error = err.Error()
		return rep
	}

	dial := gorillaDialer(cfg)
	var set *docSet
	if cfg.deflate {
		if set, err = newDocSet(256, cfg.size); err != nil {
			rep.Error = err.Error()
			return rep
		}
		dial = deflateDialer(cfg, set)
	}
	rampStart := time.Now()
	conns, connectErr, connectErrors, extensions := connect(cfg, dial)
	rep.Extensions = extensions
	rep.ConnectSeconds = time.Since(rampStart).Seconds()
	rep.ConnectErrors = connectErrors
	for _, c := range conns {
		if c != nil {
			rep.Connected++
		}
	}
	if rep.Connected < int64(cfg.connections) {
		rep.Error = fmt.Sprintf("only %d of %d connections established in %.1fs: %v",
			rep.Connected, cfg.connections, rep.ConnectSeconds, connectErr)
		for _, c := range conns {
			if c != nil {
				c.close(0)
			}
		}
		return rep
	}

	hist := newHistogram()
	fails := &failures{kinds: map[string]int64{}}
	var roundTrips atomic.Uint64
	var running sync.WaitGroup
	var unfinished atomic.Int64
	unfinished.Store(int64(len(conns)))
	begin := make(chan struct{})
	var end time.Time // set before begin is closed, read after
	for i, c := range conns {
		running.Add(1)
		go func() {
			defer running.Done()
			defer unfinished.Add(-1)
			<-begin
			c.loop(i, cfg, end, hist, &roundTrips, fails)
			c.close(cfg.closeGrace)
		}()
	}
	// CPU time over the window only (not the ramp-up or the closing), read when it
	// opens and when it closes.
	var serverCPU, loadgenCPU float64
	cpuRead := make(chan struct{})
	if cfg.serverPgid > 0 {
		serverCPU = -groupCPUSeconds(cfg.serverPgid)
	}
	loadgenCPU = -selfCPUSeconds()
	// Clients start together once every connection is up; the window starts now.
	end = time.Now().Add(cfg.duration)
	close(begin)
	time.AfterFunc(time.Until(end), func() {
		if cfg.serverPgid > 0 {
			serverCPU += groupCPUSeconds(cfg.serverPgid)
		}
		loadgenCPU += selfCPUSeconds()
		close(cpuRead)
	})

	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.duration + cfg.timeout + cfg.closeGrace + 5*time.Second):
		// Every read and write has a deadline, so this means something is badly wrong;
		// report what there is rather than hang.
	}

	rep.DurationSeconds = cfg.duration.Seconds()
	rep.RoundTrips = roundTrips.Load()
	if set != nil {
		rep.CompressedEchos = set.compressed.Load()
	}
	rep.RoundTripsPerS = float64(rep.RoundTrips) / rep.DurationSeconds
	rep.Errors = fails.total.Load()
	fails.mu.Lock()
	for k, v := range fails.kinds {
		rep.ErrorKinds[k] = v
	}
	rep.FirstError = fails.first
	fails.mu.Unlock()
	rep.Unfinished = unfinished.Load()
	<-cpuRead // the window is over, so this has fired
	rep.ServerCPU = serverCPU
	rep.LoadgenCPU = loadgenCPU
	if hist.total.Load() > 0 {
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		rep.LatencyMs = &latency{
			P50:  ms(hist.quantile(0.50)),
			P90:  ms(hist.quantile(0.90)),
			P99:  ms(hist.quantile(0.99)),
			P999: ms(hist.quantile(0.999)),
			Max:  ms(hist.max.Load()),
			Mean: hist.mean() / 1e6,
		}
	}
	return rep
}

// connect opens the connections with at most cfg.dialParallel handshakes in flight and
// stops at the first failure (a benchmark with fewer clients than asked is not the one
// asked for). It returns the connections (nil where none was made), the first error and
// how many dials failed.
func connect(cfg config, dial dialFunc) ([]client, error, int64, string) {
	conns := make([]client, cfg.connections)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.rampTimeout)
	defer cancel()
	var agreed atomic.Value // the first connection's Sec-WebSocket-Extensions
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		failed   atomic.Int64
	)
	slots := make(chan struct{}, cfg.dialParallel)
ramp:
	for i := range conns {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break ramp
		}
		if ctx.Err() != nil {
			<-slots
			break ramp
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			dctx, dcancel := context.WithTimeout(ctx, cfg.connectTimeout)
			defer dcancel()
			conn, ext, err := dial(dctx)
			if err != nil {
				if ctx.Err() != nil {
					// The ramp was stopped by another connection's failure, or ran out of time.
					return
				}
				failed.Add(1)
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("connection %d: %w", i+1, err)
				}
				mu.Unlock()
				cancel()
				return
			}
			agreed.CompareAndSwap(nil, ext)
			conns[i] = conn
		}()
	}
	wg.Wait()
	if firstErr == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		firstErr = fmt.Errorf("ramp-up took longer than %s", cfg.rampTimeout)
	}
	ext, _ := agreed.Load().(string)
	return conns, firstErr, failed.Load(), ext
}

// echoLoop sends a message, waits for its echo and checks it, until the window ends or
// an error; round trips that complete inside the window are counted.
func echoLoop(c *websocket.Conn, id int, cfg config, end time.Time, hist *histogram, roundTrips *atomic.Uint64, fails *failures) {
	msg := bytes.Repeat([]byte{'x'}, cfg.size)
	buf := make([]byte, cfg.size+1)
	const hexDigits = "0123456789abcdef"
	seq := uint64(id) << 32
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		// The sequence number in the message's tail, so a stale or foreign echo shows.
		seq++
		for i, v := len(msg)-1, seq; i >= 0 && i >= len(msg)-16; i, v = i-1, v>>4 {
			msg[i] = hexDigits[v&15]
		}
		deadline := t0.Add(cfg.timeout)
		c.SetWriteDeadline(deadline)
		if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
			fails.add(kindOf(err), err)
			return
		}
		c.SetReadDeadline(deadline)
		kind, r, err := c.NextReader()
		if err != nil {
			fails.add(kindOf(err), err)
			return
		}
		n, err := readAll(r, buf)
		if err != nil {
			fails.add(kindOf(err), err)
			return
		}
		t1 := time.Now()
		if kind != websocket.TextMessage || !bytes.Equal(buf[:n], msg) {
			fails.add("mismatch", fmt.Errorf("sent %q, got %q (type %d)", msg, buf[:n], kind))
			return
		}
		if t1.After(end) {
			return
		}
		hist.record(t1.Sub(t0).Nanoseconds())
		roundTrips.Add(1)
	}
}

// readAll reads one message into buf; a message longer than buf is an error.
func readAll(r io.Reader, buf []byte) (int, error) {
	n := 0
	for {
		if n == len(buf) {
			return n, errors.New("echo longer than the message sent")
		}
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func kindOf(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case websocket.IsUnexpectedCloseError(err) || errors.Is(err, websocket.ErrCloseSent):
		return "closed"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "reset"
	default:
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return "closed"
		}
		return "other"
	}
}

// closeConn sends a close frame and waits (briefly) for the server's, then drops the socket.
func closeConn(c *websocket.Conn, grace time.Duration) {
	deadline := time.Now().Add(grace)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if err := c.WriteControl(websocket.CloseMessage, msg, deadline); err == nil {
		c.SetReadDeadline(deadline)
		for {
			if _, _, err := c.NextReader(); err != nil {
				break
			}
		}
	}
	c.Close()
}
