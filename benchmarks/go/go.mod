module veter.bench/gohttp

go 1.22
