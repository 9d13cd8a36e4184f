package storetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections on loopback to a real server, and can
// cut them: while it is down, every connection it holds is closed and new
// ones are closed as soon as they are accepted, which is what a client
// sees of a server that died. It injects the fault in the network; the
// server behind it is the real one.
type Proxy struct {
	// Addr is the proxy's host:port, to give the client instead of the
	// server's.
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

// NewProxy starts a proxy to target, stopped at the end of the test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.serve(&wg)
	}()
	t.Cleanup(func() {
		ln.Close()
		p.Down()
		wg.Wait()
	})
	return p
}

func (p *Proxy) serve(wg *sync.WaitGroup) {
	for {
		c, err := p.ln.Accept()
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
		wg.Add(2)
		go p.pipe(wg, c, s)
		go p.pipe(wg, s, c)
	}
}

func (p *Proxy) pipe(wg *sync.WaitGroup, dst, src net.Conn) {
	defer wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Down cuts every connection and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// Up accepts connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}
