module appmonitor.local/memhog

go 1.24
