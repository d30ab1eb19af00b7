use std::fmt;
use crate::util::{self, square as sq, consts::*};
use super::geometry::Point;
extern crate serde as ser;

/// A circle.
/// Round.
#[derive(Debug, Clone)]
pub struct Circle {
    /// Radius.
    pub r: f64,
    center: Point,
}

pub enum Shape {
    Round(Circle),
    Square { side: f64 },
    Empty = 3,
}

pub trait Area: fmt::Debug + Clone {
    fn area(&self) -> f64;
    fn double(&self) -> f64 {
        self.area() * 2.0
    }
}

impl Circle {
    pub fn new(r: f64) -> Self {
        Self { r, center: Point::origin() }
    }

    pub fn scaled(&self, k: f64) -> Circle {
        let factor = k * 2.0;
        match self.center {
            Point { x, y } => Circle::new(sq(self.r) * factor + x + y),
        }
    }
}

impl Area for Circle {
    fn area(&self) -> f64 {
        let f = |t: f64| t * PI;
        f(util::square(self.r)) + self::helper(1) + crate::util::cube(2.0)
    }
}

pub const LIMIT: usize = 10;
pub type Shapes = Vec<Shape>;

macro_rules! circle {
    ($r:expr) => { Circle::new($r) };
}

fn helper(n: i32) -> i32 {
    println!("{}", n);
    let v: Vec<Shape> = Vec::new();
    n + LIMIT as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_a_circle() {
        assert_eq!(Circle::new(1.0).r, 1.0);
    }
}
