class Broken { void f( { int x = ; } class Ok { void g() { h(); } }
