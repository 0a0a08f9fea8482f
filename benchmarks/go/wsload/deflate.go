package main

// The -deflate mode: permessage-deflate (RFC 7692) on gobwas/ws, whose frame-level
// API lets the generator send frames compressed ahead of time.
//
// The offer asks for no context takeover on both sides, the setting gorilla and most
// clients use. The server must agree to server_no_context_takeover: then every echo
// inflates on its own. Whether the server also names client_no_context_takeover does
// not matter, because the documents are compressed with no context anyway. aiohttp
// leaves it out, which gorilla's own negotiation refuses.
//
// Each document's frame is compressed and masked once, with a fixed mask per
// document. Sending it costs one write. A fixed mask would matter only to a proxy
// cache on the path, and there is none on loopback. Every echo is read, inflated
// when RSV1 is set, and compared byte for byte with the document sent.

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
)

// The bytes a sender strips from the end of each compressed message.
var deflateTail = []byte{0x00, 0x00, 0xff, 0xff}

// docSet holds the documents and their ready-made frames, shared by every connection.
type docSet struct {
	docs       [][]byte
	frames     [][]byte
	longest    int
	compressed atomic.Uint64 // echoes that came back compressed
}

// newDocSet makes n different JSON documents of about size bytes (a list of records,
// as an API answers) and their compressed, masked frames.
func newDocSet(n, size int) (*docSet, error) {
	set := &docSet{docs: make([][]byte, n), frames: make([][]byte, n)}
	for i := range set.docs {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"seq":%d,"items":[`, i)
		for k := 0; b.Len() < size-90; k++ {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d,"name":"item %d of message %d","price":%d.%02d,"tags":["red","blue"]}`,
				k, k, i, (k*37+i)%1000, k%100)
		}
		b.WriteString(`]}`)
		doc := b.Bytes()
		set.docs[i] = doc
		set.longest = max(set.longest, len(doc))

		var packed bytes.Buffer
		w, err := flate.NewWriter(&packed, flate.DefaultCompression)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(doc); err != nil {
			return nil, err
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		payload := bytes.TrimSuffix(packed.Bytes(), deflateTail)
		frame := ws.NewTextFrame(payload)
		frame.Header.Rsv = ws.Rsv(true, false, false)
		frame = ws.MaskFrameInPlaceWith(frame, [4]byte{byte(i), 0x5a, byte(i >> 8), 0xa5})
		if set.frames[i], err = ws.CompileFrame(frame); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// deflateClient is one connection in the -deflate mode.
type deflateClient struct {
	conn     net.Conn
	br       *bufio.Reader
	set      *docSet
	payload  []byte
	plain    bytes.Buffer
	inflater io.ReadCloser
	source   bytes.Reader
}

func deflateDialer(cfg config, set *docSet) dialFunc {
	offer := httphead.NewOption("permessage-deflate", map[string]string{
		"server_no_context_takeover": "",
		"client_no_context_takeover": "",
	})
	return func(ctx context.Context) (client, string, error) {
		dialer := ws.Dialer{Timeout: cfg.connectTimeout, Extensions: []httphead.Option{offer}}
		conn, br, hs, err := dialer.Dial(ctx, cfg.url)
		if err != nil {
			return nil, "", err
		}
		var names []string
		agreed := false
		for _, opt := range hs.Extensions {
			names = append(names, opt.String())
			_, snct := opt.Parameters.Get("server_no_context_takeover")
			agreed = agreed || (string(opt.Name) == "permessage-deflate" && snct)
		}
		ext := strings.Join(names, ", ")
		if !agreed {
			conn.Close()
			return nil, ext, fmt.Errorf("the server did not agree to permessage-deflate with server_no_context_takeover (it answered %q)", ext)
		}
		if br == nil {
			br = bufio.NewReaderSize(conn, 16384)
		}
		c := &deflateClient{conn: conn, br: br, set: set, payload: make([]byte, 0, set.longest+64)}
		c.inflater = flate.NewReader(&c.source)
		return c, ext, nil
	}
}

func (c *deflateClient) loop(id int, cfg config, end time.Time, hist *histogram, roundTrips *atomic.Uint64, fails *failures) {
	for n := id; ; n++ {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		k := n % len(c.set.docs)
		deadline := t0.Add(cfg.timeout)
		c.conn.SetDeadline(deadline)
		if _, err := c.conn.Write(c.set.frames[k]); err != nil {
			fails.add(deflateKind(err), err)
			return
		}
		echo, err := c.readMessage()
		if err != nil {
			fails.add(deflateKind(err), err)
			return
		}
		t1 := time.Now()
		if !bytes.Equal(echo, c.set.docs[k]) {
			fails.add("mismatch", fmt.Errorf("echo of document %d differs (%d bytes, not %d)", k, len(echo), len(c.set.docs[k])))
			return
		}
		if t1.After(end) {
			return
		}
		hist.record(t1.Sub(t0).Nanoseconds())
		roundTrips.Add(1)
	}
}

var errFragmented = errors.New("a fragmented echo (not expected of an echo server)")

// readMessage reads the next text message (answering pings on the way) and returns it
// inflated; the slice is valid until the next call.
func (c *deflateClient) readMessage() ([]byte, error) {
	for {
		h, err := ws.ReadHeader(c.br)
		if err != nil {
			return nil, err
		}
		if h.Length > int64(c.set.longest)+1024 {
			return nil, fmt.Errorf("a %d-byte frame, longer than any document", h.Length)
		}
		c.payload = c.payload[:h.Length]
		if _, err := io.ReadFull(c.br, c.payload); err != nil {
			return nil, err
		}
		switch h.OpCode {
		case ws.OpPing:
			pong := ws.MaskFrameInPlace(ws.NewPongFrame(append([]byte(nil), c.payload...)))
			if err := ws.WriteFrame(c.conn, pong); err != nil {
				return nil, err
			}
			continue
		case ws.OpPong:
			continue
		case ws.OpClose:
			return nil, fmt.Errorf("closed by the server: % x", c.payload)
		case ws.OpText:
		default:
			return nil, fmt.Errorf("unexpected opcode %d", h.OpCode)
		}
		if !h.Fin {
			return nil, errFragmented
		}
		if h.Rsv&0x4 == 0 {
			return c.payload, nil
		}
		c.set.compressed.Add(1)
		c.payload = append(c.payload, deflateTail...)
		c.source.Reset(c.payload)
		if err := c.inflater.(flate.Resetter).Reset(&c.source, nil); err != nil {
			return nil, err
		}
		c.plain.Reset()
		if _, err := c.plain.ReadFrom(c.inflater); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("inflating an echo: %w", err)
		}
		return c.plain.Bytes(), nil
	}
}

func (c *deflateClient) close(grace time.Duration) {
	c.conn.SetDeadline(time.Now().Add(grace))
	frame := ws.MaskFrameInPlace(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))
	if err := ws.WriteFrame(c.conn, frame); err == nil {
		// Wait for the server's close (or the deadline), as the plain mode does.
		for {
			h, err := ws.ReadHeader(c.br)
			if err != nil {
				break
			}
			if _, err := io.CopyN(io.Discard, c.br, h.Length); err != nil || h.OpCode == ws.OpClose {
				break
			}
		}
	}
	c.conn.Close()
}

func deflateKind(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "reset"
	default:
		return kindOf(err)
	}
}
