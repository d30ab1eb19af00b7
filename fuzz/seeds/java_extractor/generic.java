package a.b;
import java.util.List;
import static java.util.Map.entry;
@Deprecated
abstract sealed class Shape<T extends Comparable<T>> permits Circle {
  protected T value;
  abstract double area();
  static <U> List<U> of(U... xs) { return List.of(xs); }
  class Inner { int x = switch (1) { case 1 -> 2; default -> { yield 3; } }; }
}
final class Circle extends Shape<Integer> {
  double area() { return Math.PI * value * value; }
  void loop() { for (int i = 0; i < 3; i++) { try { run(i); } catch (RuntimeException | Error e) { throw e; } finally { done(); } } }
  Runnable r = () -> System.out.println(this.value);
}
