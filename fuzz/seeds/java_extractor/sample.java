package com.example.app;

import java.util.*;
import java.util.function.Function;
import static java.lang.Math.max;

/** A sample class. */
public class Sample<T> extends Base implements Runnable, Comparable<Sample<T>> {
    private final List<String> names = new ArrayList<>();
    static final int LIMIT = 10, OTHER = 20;

    /** Builds it. */
    public Sample(int n) {
        super(n);
        this.names.add("x");
        helper().run(this.names.size(), other.field.deep);
    }

    @Override
    public void run() {
        Runnable r = new Runnable() { public void run() { System.out.println(a.b.c); } };
        names.stream().map(s -> s.trim()).filter(Objects::nonNull).forEach(this::accept);
        int x = max(1, 2) + Util.compute(x, y).value().other(z);
        new Sample<String>(3).run();
        foo().bar.baz();
    }

    int compareTo(Sample<T> o) { return 0; }

    static class Inner {
        void go(String... args) { Inner.this.go(); }
        enum Color { RED, GREEN; void paint() { paint(); } }
        interface Shape { double area(); }
    }
    record Point(int x, int y) { Point { check(x); } }
}
interface Api { void call(int a, String b); }
enum Mode { ON, OFF }
@interface Marker { String value(); }
