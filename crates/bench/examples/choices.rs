use broadphase::auto_stats;
use broadphase_scenes::{to_f32, Scene};
fn main() {
    for scene in Scene::ALL {
        for n in [200usize, 300, 500, 700, 1000, 1500, 2000, 3000, 4000] {
            let b3 = scene.generate::<3>(n, 1);
            let b2 = scene.generate::<2>(n, 1);
            let (s3, s2, s3f) = (auto_stats(&b3), auto_stats(&b2), auto_stats(&to_f32(&b3)));
            println!(
                "{scene} {n} 3D {:?} ({:.0}, {:.0}) 2D {:?} ({:.0}, {:.0}) 3Df32 {:?}",
                s3.choice,
                s3.sweep_candidates,
                s3.grid_candidates,
                s2.choice,
                s2.sweep_candidates,
                s2.grid_candidates,
                s3f.choice
            );
        }
    }
}
