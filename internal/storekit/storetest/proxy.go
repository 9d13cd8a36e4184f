package storetest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections on loopback to a real server, and can
// make it look dead, hung or slow: while it is down, every connection it
// holds is closed and new ones are closed as soon as they are accepted;
// once killed, connections are refused (nothing listens: a server that
// died); while it hangs, connections are accepted and nothing is
// forwarded either way (a server stopped with SIGSTOP, whose kernel still
// completes handshakes); with a delay, every chunk the server sends
// reaches the client that much later (a slow server or network). It
// injects the fault in the network; the server behind it is the real one.
type Proxy struct {
	// Addr is the proxy's host:port, to give the client instead of the
	// server's.
	Addr   string
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	ln     net.Listener // nil while killed
	closed bool
	down   bool
	hung   bool
	delay  time.Duration
	change chan struct{} // closed (and replaced) when the mode changes
	conns  map[net.Conn]struct{}
}

// NewProxy starts a proxy to target, stopped at the end of the test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}, change: make(chan struct{})}
	p.start(ln)
	t.Cleanup(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.Kill()
		p.wg.Wait()
	})
	return p
}

func (p *Proxy) start(ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.serve(ln)
	}()
}

func (p *Proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s, false)
		go p.pipe(s, c, true)
	}
}

// pipe copies src to dst, chunk by chunk, holding each while the proxy
// hangs, and for the delay when fromServer.
func (p *Proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.hold(fromServer) {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits while the proxy hangs, and for the delay of a chunk from the
// server; it reports false when the proxy went down meanwhile.
func (p *Proxy) hold(fromServer bool) bool {
	var timer *time.Timer
	for {
		p.mu.Lock()
		down, hung, delay, change := p.down, p.hung, p.delay, p.change
		p.mu.Unlock()
		if down {
			return false
		}
		if hung {
			<-change
			continue
		}
		if !fromServer || delay == 0 {
			return true
		}
		if timer == nil {
			timer = time.NewTimer(delay)
			defer timer.Stop()
		}
		select {
		case <-timer.C:
			return true
		case <-change:
		}
	}
}

// setMode changes the mode and wakes the connections waiting on it.
func (p *Proxy) setMode(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
	close(p.change)
	p.change = make(chan struct{})
}

// Down cuts every connection and closes new ones as soon as they are
// accepted, until Up.
func (p *Proxy) Down() {
	p.setMode(func() {
		p.down = true
		for c := range p.conns {
			c.Close()
		}
	})
}

// Kill cuts every connection and stops listening, so that connections are
// refused, until Up listens again on the same address.
func (p *Proxy) Kill() {
	p.Down()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
}

// Hang holds every connection, old and new, without closing it, until Up.
func (p *Proxy) Hang() { p.setMode(func() { p.hung = true }) }

// Delay makes every chunk from the server reach the client d later, until
// Up.
func (p *Proxy) Delay(d time.Duration) { p.setMode(func() { p.delay = d }) }

// Up forwards connections again, at once, listening again if killed.
func (p *Proxy) Up() {
	p.setMode(func() { p.down, p.hung, p.delay = false, false, 0 })
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil && !p.closed {
		ln, err := net.Listen("tcp", p.Addr)
		if err != nil {
			panic("storetest: listening again on " + p.Addr + ": " + err.Error())
		}
		p.ln = ln
		p.start(ln)
	}
}
