module sheaf.dev/sheaf

go 1.21
