// aco-netem-proxy is a loopback TCP proxy that stands between kube-scheduler and the Worker in the
// e2e tests and benchmarks. It models the distance to the edge and the ways the edge can fail:
//
//	pass       forward bytes, each direction delayed by half of -delay (an added round trip)
//	refuse     accept and close at once (the Worker is unreachable)
//	blackhole  accept, read, never answer (the Worker hangs: kube-scheduler's httpTimeout fires)
//	error      terminate TLS with -tls-cert/-tls-key and answer every request with HTTP 500
//
// The mode and delay change at run time through a small HTTP control endpoint:
//
//	curl -X POST 'http://CONTROL/mode?m=blackhole'   curl -X POST 'http://CONTROL/delay?d=20ms'
//	curl -X POST 'http://CONTROL/upstream?a=127.0.0.1:8787'   (the Worker restarted on a new port)
//
// Changing either closes open connections, so keep-alive connections cannot outlive a change.
// It prints "READY <listen addr> <control addr>" on stdout once both listeners are up.
// Only loopback addresses are accepted for listening and upstream.
package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

type proxy struct {
	upstream string
	tlsConf  *tls.Config

	mu    sync.Mutex
	mode  string
	delay time.Duration
	conns map[net.Conn]struct{}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to accept kube-scheduler's connections on")
	control := flag.String("control", "127.0.0.1:0", "address of the HTTP control endpoint")
	upstream := flag.String("upstream", "", "the Worker's host:port (loopback)")
	delay := flag.Duration("delay", 0, "added round-trip time (half on each direction)")
	mode := flag.String("mode", "pass", "pass | refuse | blackhole | error")
	certFile := flag.String("tls-cert", "", "certificate for mode=error (PEM)")
	keyFile := flag.String("tls-key", "", "key for mode=error (PEM)")
	flag.Parse()

	for _, a := range []string{*listen, *control, *upstream} {
		if a == "" {
			continue
		}
		if h, _, err := net.SplitHostPort(a); err != nil || !net.ParseIP(h).IsLoopback() {
			log.Fatalf("aco-netem-proxy: %q is not a loopback host:port", a)
		}
	}
	if *upstream == "" {
		log.Fatal("aco-netem-proxy: -upstream is required")
	}
	p := &proxy{upstream: *upstream, mode: *mode, delay: *delay, conns: map[net.Conn]struct{}{}}
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			log.Fatalf("aco-netem-proxy: %v", err)
		}
		p.tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	if !validMode(p.mode) {
		log.Fatalf("aco-netem-proxy: unknown mode %q", p.mode)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	cl, err := net.Listen("tcp", *control)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mode", func(w http.ResponseWriter, r *http.Request) {
		m := r.URL.Query().Get("m")
		if r.Method != http.MethodPost || !validMode(m) || (m == "error" && p.tlsConf == nil) {
			http.Error(w, "POST /mode?m=pass|refuse|blackhole|error (error needs -tls-cert)", http.StatusBadRequest)
			return
		}
		p.set(func() { p.mode = m })
		fmt.Fprintf(w, "mode=%s\n", m)
	})
	mux.HandleFunc("/upstream", func(w http.ResponseWriter, r *http.Request) {
		a := r.URL.Query().Get("a")
		h, _, err := net.SplitHostPort(a)
		if r.Method != http.MethodPost || err != nil || !net.ParseIP(h).IsLoopback() {
			http.Error(w, "POST /upstream?a=127.0.0.1:PORT", http.StatusBadRequest)
			return
		}
		p.set(func() { p.upstream = a })
		fmt.Fprintf(w, "upstream=%s\n", a)
	})
	mux.HandleFunc("/delay", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("d"))
		if r.Method != http.MethodPost || err != nil || d < 0 {
			http.Error(w, "POST /delay?d=20ms", http.StatusBadRequest)
			return
		}
		p.set(func() { p.delay = d })
		fmt.Fprintf(w, "delay=%s\n", d)
	})
	go func() { log.Fatal(http.Serve(cl, mux)) }()

	fmt.Printf("READY %s %s\n", ln.Addr(), cl.Addr())
	os.Stdout.Sync()
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go p.handle(c)
	}
}

func validMode(m string) bool {
	switch m {
	case "pass", "refuse", "blackhole", "error":
		return true
	}
	return false
}

// set applies a change and closes every open connection.
func (p *proxy) set(change func()) {
	p.mu.Lock()
	change()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
}

func (p *proxy) track(c net.Conn) (mode string, delay time.Duration, upstream string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = struct{}{}
	return p.mode, p.delay, p.upstream
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *proxy) handle(c net.Conn) {
	mode, delay, upstream := p.track(c)
	defer p.untrack(c)
	switch mode {
	case "refuse":
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST, like a closed port
		}
		return
	case "blackhole":
		io.Copy(io.Discard, c)
		return
	case "error":
		serveErrors(tls.Server(c, p.tlsConf))
		return
	}
	up, err := net.DialTimeout("tcp", upstream, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { pipe(up, c, delay/2); done <- struct{}{} }()
	go func() { pipe(c, up, delay/2); done <- struct{}{} }()
	<-done
}

type chunk struct {
	due  time.Time
	data []byte
}

// pipe copies src to dst, holding every chunk for `delay` after it was read. Reading goes on
// while chunks wait, so the delay adds latency without limiting throughput.
func pipe(dst, src net.Conn, delay time.Duration) {
	defer dst.Close()
	defer src.Close()
	if delay <= 0 {
		io.Copy(dst, src)
		return
	}
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{time.Now().Add(delay), append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		time.Sleep(time.Until(ch.due))
		if _, err := dst.Write(ch.data); err != nil {
			for range q {
			}
			return
		}
	}
}

// serveErrors answers each HTTP/1.1 request on c with 500 (kube-scheduler treats any non-200
// reply as an extender error).
func serveErrors(c *tls.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		body := "injected failure (aco-netem-proxy mode=error)\n"
		_, err = fmt.Fprintf(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
			len(body), body)
		if err != nil || strings.EqualFold(req.Header.Get("Connection"), "close") {
			return
		}
	}
}
