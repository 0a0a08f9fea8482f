module veter.bench/wsload

go 1.26

require (
	github.com/gobwas/httphead v0.1.0
	github.com/gobwas/ws v1.5.0
	github.com/gorilla/websocket v1.5.3
)
