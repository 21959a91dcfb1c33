fn total(xs: &[i32]) -> i32 {
	let mut sum = 0;
	for x in xs {
		sum += x
		let y = 2;
	}
	sum
}

fn main() {
    let unused = 3;
    println!("{}", total(&[1, 2]));
}
