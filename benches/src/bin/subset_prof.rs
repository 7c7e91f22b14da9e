use edgewise::SubsetLb;
use edgewise_benches::subset::Scenario;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args[1].parse().unwrap();
    let sc = match args[2].as_str() { "a" => Scenario::FourByThree, "b" => Scenario::Mosn, _ => Scenario::Unique };
    let reps: usize = args[3].parse().unwrap();
    let table = sc.table(n, 1);
    let t = Instant::now();
    for _ in 0..reps { table.validate().unwrap(); }
    println!("validate {:?}", t.elapsed() / reps as u32);
    let t = Instant::now();
    for _ in 0..reps { std::hint::black_box(SubsetLb::build(&table).unwrap()); }
    println!("build {:?}", t.elapsed() / reps as u32);
}
